/**
 * Quiet failures (issue 38): during an outage the same warning comes again and again (a 21 s broker outage
 * wrote 2,597 lines from one instance, almost all kafkajs's reconnect attempts). A repeated warning or error is
 * written once, then summarised with a count once per interval while it lasts, and once more when it has
 * stopped. Only lines are held back: metrics are counted where the failure happens, each time.
 *
 * Two lines repeat each other when their identity matches: the level, the logger's `component`, the message
 * with its numbers blanked (a port, a retry delay), and the few fields that say what kind of failure it is
 * (`REPEAT_FIELDS`, an error's type and code). The fields that vary per occurrence (request ids, offsets,
 * stacks) are not part of it. So a line that differs in any of those is written at once: the first occurrence of
 * anything is never swallowed.
 */

/** Fields that tell one kind of failure from another; everything else varies per occurrence. */
export const REPEAT_FIELDS = ['namespace', 'reason', 'why', 'code', 'hook', 'org', 'poller', 'api', 'rule'] as const;

/** pino's numeric levels: warn and error are summarised; fatal (and below warn) always written. */
const WARN = 40;
const FATAL = 60;
/** The longest message text that goes into a key; longer messages rarely differ only after this. */
const MAX_KEY_MSG = 200;
/** A grouped summary lists at most this many repeats (it counts them all). */
const MAX_GROUPED = 20;

/** How repeats are summarised. */
export interface RepeatOptions {
  /** A repeated line is summarised once per this many ms while it lasts; 0 writes every line. */
  readonly intervalMs: number;
  /** At most this many distinct lines are tracked; beyond, new ones are written as they come (never dropped). */
  readonly maxKeys?: number;
  /** The clock (ms); tests inject theirs. */
  readonly now?: () => number;
}

/** Writes one line the way the logger would have (pino's raw method, bound to the logger that logged it). */
type Write = (obj: Record<string, unknown>, msg: string) => void;

interface Entry {
  readonly level: number;
  readonly component: string;
  readonly write: Write;
  readonly msg: string;
  readonly fields: Record<string, unknown>;
  readonly firstAt: number;
  /** Start of the current summary window. */
  windowAt: number;
  lastAt: number;
  /** Occurrences held back since the last line written for this key. */
  held: number;
  /** Occurrences in all, the first included. */
  total: number;
}

/**
 * The repeat filter behind createLogger. `admit` says whether a line is written now; `sweep` (on a timer in
 * production, called directly by tests) writes the summaries that are due and the lines saying a repeat stopped.
 */
export class LogRepeats {
  readonly #intervalMs: number;
  readonly #maxKeys: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  /** Whether lines at `level` are filtered at all: a cheap check before the caller builds `admit`'s arguments. */
  filters(level: number): boolean {
    return this.#intervalMs > 0 && level >= WARN && level < FATAL;
  }

  constructor(o: RepeatOptions) {
    this.#intervalMs = o.intervalMs;
    this.#maxKeys = o.maxKeys ?? 256;
    this.#now = o.now ?? Date.now;
  }

  /** How many distinct lines are tracked (bounded by `maxKeys`). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Whether a line at `level` with `obj` and `msg`, from a logger with `bindings` (its `component`, and perhaps
   * the hook or org it is about), is written now. Held back only when it repeats a line written (or
   * summarised) less than an interval ago.
   */
  admit(
    level: number,
    bindings: Record<string, unknown>,
    obj: Record<string, unknown>,
    msg: string,
    write: Write,
  ): boolean {
    // A line naming the client's address (`ip`) is the security record of one request (a refused secret: who
    // tried, from where, with its request id): each is kept. Its metric counts it too.
    if (!this.filters(level) || obj['ip'] !== undefined) return true;
    const component = bindings['component'];
    // The key takes identity fields bound on the logger too; a summary repeats only the line's own (the logger
    // writes its bindings itself).
    const fields = identityFields(obj);
    const key = repeatKey(level, component, identityFields({ ...bindings, ...obj }), msg);
    const now = this.#now();
    const e = this.#entries.get(key);
    if (e === undefined) {
      if (this.#entries.size >= this.#maxKeys) return true;
      const c = String(component ?? '');
      const first = { firstAt: now, windowAt: now, lastAt: now, held: 0, total: 1 };
      this.#entries.set(key, { level, component: c, write, msg, fields, ...first });
      return true;
    }
    e.lastAt = now;
    e.total++;
    e.held++;
    if (now - e.windowAt >= this.#intervalMs) this.#summarise(e, now);
    return false;
  }

  /** Writes the summaries that are due, and a line for each repeat that has stopped (quiet for an interval). */
  sweep(): void {
    const now = this.#now();
    for (const [key, e] of this.#entries) {
      if (now - e.lastAt >= this.#intervalMs) {
        // One line says both: how many since the last summary, and that it stopped (with the whole count).
        if (e.total > 1) {
          const overS = Math.round((e.lastAt - e.firstAt) / 1000);
          e.write(
            { ...e.fields, repeated: e.held, repeated_total: e.total, repeat_stopped: true },
            `${e.msg} (stopped: ${e.total} times in ${overS} s, ${e.held} since the last line)`,
          );
        }
        this.#entries.delete(key);
      } else if (e.held > 0 && now - e.windowAt >= this.#intervalMs) {
        this.#summarise(e, now);
      }
    }
  }

  /**
   * Writes the summary of `due`, and in the same line those of every other repeat of its component and level
   * held back meanwhile (an outage repeats several lines at once: one line per component per interval, not one
   * per kind). Their windows restart together, so they stay in step.
   */
  #summarise(due: Entry, now: number): void {
    const group = [...this.#entries.values()].filter(
      (e) => e.held > 0 && e.level === due.level && e.component === due.component,
    );
    const windowS = Math.round((now - Math.min(...group.map((e) => e.windowAt))) / 1000);
    if (group.length === 1) {
      due.write(
        { ...due.fields, repeated: due.held, repeat_window_s: windowS },
        `${due.msg} (repeated ${due.held} times in the last ${windowS} s)`,
      );
    } else {
      const repeats = group
        .slice(0, MAX_GROUPED)
        .map((e) => ({ msg: e.msg.slice(0, MAX_KEY_MSG), ...e.fields, repeated: e.held }));
      const held = group.reduce((n, e) => n + e.held, 0);
      due.write(
        { repeats, repeated: held, repeat_window_s: windowS },
        `${group.length} ${due.level >= 50 ? 'errors' : 'warnings'} repeated (${held} times in the last ${windowS} s)`,
      );
    }
    for (const e of group) {
      e.held = 0;
      e.windowAt = now;
    }
  }
}

/** The fields of a log object that identify the kind of failure, an error reduced to its type and code. */
export function identityFields(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of REPEAT_FIELDS) if (isScalar(obj[f])) out[f] = bounded(obj[f]);
  const err = obj['err'];
  if (err instanceof Error) {
    out['err_type'] = err.constructor?.name ?? err.name;
    const code = (err as { code?: unknown }).code;
    if (isScalar(code)) out['err_code'] = bounded(code);
  }
  return out;
}

/** The identity of a line: level, component, the message with its numbers blanked, and the identity fields. */
export function repeatKey(level: number, component: unknown, fields: Record<string, unknown>, msg: string): string {
  const text = msg.slice(0, MAX_KEY_MSG).replace(/\d+/g, '#');
  return JSON.stringify([level, String(component ?? ''), text, fields]);
}

/** Identity fields are ours (config names, closed reasons), but a key stays small whatever reaches it. */
function bounded(v: string | number | boolean): string | number | boolean {
  return typeof v === 'string' && v.length > 100 ? `${v.slice(0, 100)}…` : v;
}

function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}
