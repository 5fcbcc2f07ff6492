/**
 * Regular expressions written by people, run on values an attacker chooses (a sign-in's login, an event's
 * field). V8 matches by backtracking, so a pattern such as `^(a+)+$` takes seconds on 30 characters — on the
 * token hook, inside someone's sign-in, with the event loop held for every other sign-in too.
 *
 * Two defences, both V8's own engine rather than a second one:
 * - a pattern is accepted only if V8's linear-time engine can run it (no backreferences, no lookaround, no
 *   case-insensitive flag — that engine does not do them), checked when the rule is loaded;
 * - the process runs with `--enable-experimental-regexp-engine-on-excessive-backtracks`: a match starts on the
 *   usual (fast) engine and moves to the linear one once it backtracks too much, so the answer is the same and
 *   its time is bounded by the input's length.
 *
 * The flags are set on import, before any pattern is compiled (V8 reads them when it compiles one), so every
 * process that loads a rule — hooklog, the tests, the benches — runs with them.
 */
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--enable-experimental-regexp-engine');
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

/** V8's flag for its linear-time engine (only with the flag above; unknown to the language, hence a name). */
const LINEAR = 'l';

/**
 * Compiles `source` for matching attacker-chosen text in time linear in its length; throws (a SyntaxError-like
 * Error whose message says why) for a pattern V8 cannot match that way.
 */
export function linearRegex(source: string): RegExp {
  const regex = new RegExp(source);
  try {
    new RegExp(source, LINEAR);
  } catch {
    throw new Error(
      'cannot be matched in time linear in the input (backreferences and lookaround are not allowed: on an ' +
        "attacker's value a backtracking match can hold the process for seconds)",
    );
  }
  return regex;
}
