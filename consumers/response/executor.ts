/**
 * The executor: `<prefix>.actions` → management calls, one partition (so one
 * org) at a time, in order, by the one instance that owns it (owned.ts). It
 * reads the decisions the transmitter recorded and the approvals operators
 * append (`hooklog actions approve`), and writes each action's steps back to
 * the same topic (which it then reads past: they change nothing).
 *
 * Each action runs once per (alert, action): its id is stable (decide.ts), the
 * executor keeps the open actions and the recently finished ids in its
 * checkpoint, and a call is made only after `started` was recorded through the
 * partition's claim (an instance that lost the partition cannot record it, so
 * cannot call). After a crash between `started` and the result, the next owner
 * finds the action started: a repeatable one is called again (harmless, and the
 * record counts the attempts: every HTTP request, the client's retries
 * included), any other is recorded `uncertain` and waits for
 * an operator (perform.ts says which is which). A result whose record failed
 * while this process still owns the partition is recorded when the batch comes
 * again, without a second call.
 */
import { isRetriable } from '../../platform/errors.js';
import type { AttemptReply } from '../../platform/identity/client.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { remember } from './checkpoint.js';
import type { ResponseOrgConfig } from './config.js';
import type { OrgManagement } from './management.js';
import type { Owned } from './owned.js';
import { isRepeatable, performAction } from './perform.js';
import type { ResponsePolicies } from './policies.js';
import { actionStreamRecord, parseActionRecord, type ActionRecord, type ResponseTopics } from './records.js';
import type { ResponseTelemetry } from './telemetry.js';

export interface ExecutorState {
  /** Actions not finished: awaiting_approval, started, uncertain (by id, as last recorded). */
  readonly open: Readonly<Record<string, ActionRecord>>;
  /** Ids finished lately: a decision that reaches the topic twice runs once. */
  readonly finished: readonly string[];
}

export const initialExecutorState = (): ExecutorState => ({ open: {}, finished: [] });

const FINISHED_IDS = 5000;
/** Results held for a failed record: a handful at most in practice (one partition's batch); the bound is a guard. */
const UNRECORDED_RESULTS = 1000;

export interface ExecutorDeps {
  readonly topics: ResponseTopics;
  readonly orgs: ReadonlyMap<string, ResponseOrgConfig>;
  readonly management: OrgManagement;
  readonly policies: ResponsePolicies;
  readonly telemetry: ResponseTelemetry;
  readonly signal: AbortSignal;
  readonly now?: () => number;
}

export function executorHandler(d: ExecutorDeps) {
  const now = () => new Date((d.now ?? Date.now)()).toISOString();
  // Attempts this process started (the `started` record's attempt) and whose call failed transiently: retried
  // without recording a new start. With the HTTP requests made for the attempt so far, every retry included.
  const mine = new Map<string, { attempt: number; requests: number }>();
  // Calls this process made whose result it could not record (the step failed: a broker restart, a time-out), by the
  // attempt they belong to. The batch comes again and finds the action `started`: the result is recorded then, the
  // call not made twice. Only a crash or a hand-over between the call and its record leaves a repeat (or
  // `uncertain`) to the next owner.
  const unrecorded = new Map<string, { attempt: number; result: ActionRecord }>();
  type O = Owned<ExecutorState>;

  const without = (s: ExecutorState, id: string): Record<string, ActionRecord> => {
    const open = { ...s.open };
    delete open[id];
    return open;
  };
  const record = async (o: O, r: ActionRecord, nextOffset: number, finished: boolean) => {
    const s = o.state;
    await o.step([{ topic: d.topics.actions, records: [actionStreamRecord(r)] }], {
      nextOffset,
      state: finished
        ? { open: without(s, r.action_id), finished: remember(s.finished, r.action_id, FINISHED_IDS) }
        : { open: { ...s.open, [r.action_id]: r }, finished: s.finished },
    });
    d.telemetry.action(r.org, r.action ?? 'unknown', r.state, {
      action_id: r.action_id,
      user_id: r.user_id,
      ...(r.attempt ? { attempt: r.attempt } : {}),
      ...(r.error ? { error: r.error } : {}),
    });
  };

  /** Makes the call of a started action and records its result. */
  const call = async (o: O, started: ActionRecord, offset: number) => {
    const m = await d.management.open(started.org);
    const id = started.action_id;
    const action = started.action!;
    const attempt = started.attempt ?? 1;
    const held = mine.get(id);
    const own = held?.attempt === attempt ? held : { attempt, requests: 0 };
    mine.set(id, own);
    // Requests before this attempt's first: its number says how many came before.
    const before = attempt - 1;
    const onAttempt = (reply: AttemptReply) => {
      own.requests++;
      d.telemetry.actionAttempt(started.org, action, reply, before + own.requests > 1);
    };
    // The action's count once the call is over: every request made for it (at least the one `started` announced).
    const made = (): Partial<ActionRecord> => ({ attempt: Math.max(attempt, before + own.requests) });
    let outcome;
    try {
      outcome = await performAction(
        m,
        { action, user_id: started.user_id!, group_id: started.group_id },
        { transient: d.policies.actionTransient, signal: d.signal, onAttempt },
      );
    } catch (err) {
      // Stopping, a repeatable action (the batch comes again and the call is repeated), or an error of ours.
      if (d.signal.aborted || !isRetriable(err) || isRepeatable(action)) throw err;
      mine.delete(id);
      const note = `the call's outcome is unknown (${(err as Error).message.slice(0, 300)}); not repeated: approve to run it again`;
      return record(o, { ...started, ...made(), state: 'uncertain', at: now(), note }, offset + 1, false);
    }
    mine.delete(id);
    const result: ActionRecord =
      outcome.result === 'done'
        ? { ...started, ...made(), state: 'done', at: now(), status: outcome.status }
        : {
            ...started,
            ...made(),
            state: 'failed',
            at: now(),
            status: outcome.status,
            error_code: outcome.error_code,
            error: outcome.error,
          };
    await recordResult(o, attempt, result, offset);
  };

  const recordResult = async (o: O, attempt: number, result: ActionRecord, offset: number) => {
    unrecorded.set(result.action_id, { attempt, result });
    if (unrecorded.size > UNRECORDED_RESULTS) unrecorded.delete(unrecorded.keys().next().value!);
    await record(o, result, offset + 1, true);
    unrecorded.delete(result.action_id);
  };

  /** Records the start of an attempt (through the claim: fenced if we lost the partition), then calls. */
  const start = async (o: O, a: ActionRecord, offset: number, extra: Partial<ActionRecord> = {}) => {
    const org = d.orgs.get(a.org);
    if (!org || org.actions.mode !== 'on' || !org.actions.allow.includes(a.action!)) {
      const note = `not run: the org's response actions are now ${org ? `mode ${org.actions.mode}` : 'not configured'}${org?.actions.mode === 'on' ? ` and ${a.action} is not allowed` : ''}`;
      return record(o, { ...a, state: 'cancelled', at: now(), note }, offset + 1, true);
    }
    const started: ActionRecord = { ...a, ...extra, state: 'started', at: now(), attempt: (a.attempt ?? 0) + 1 };
    if (!extra.note) delete (started as { note?: string }).note;
    await record(o, started, offset, false);
    await call(o, started, offset);
  };

  /** An action found started: ours failing transiently, or one whose result a crash left unrecorded. */
  const resume = async (o: O, a: ActionRecord, offset: number) => {
    const held = unrecorded.get(a.action_id);
    if (held && held.attempt === (a.attempt ?? 1)) return recordResult(o, held.attempt, held.result, offset);
    if (mine.get(a.action_id)?.attempt === (a.attempt ?? 1)) return call(o, a, offset);
    const earlier = `attempt ${a.attempt ?? 1} was started but its result was not recorded (a crash or a hand-over)`;
    if (isRepeatable(a.action!))
      return start(o, a, offset, { note: `${earlier}; repeated (harmless for ${a.action})` });
    const note = `${earlier}; ${a.action} is not repeated automatically: check the user and approve to run it again`;
    return record(o, { ...a, state: 'uncertain', at: now(), note }, offset + 1, false);
  };

  return async (rec: ConsumedRecord, o: O): Promise<void> => {
    const parsed = parseActionRecord(rec.value);
    if (!parsed.ok) return d.telemetry.invalidAction(rec.partition, rec.offset, parsed.reason);
    const r = parsed.record;
    const open = o.state.open[r.action_id];
    if (open?.state === 'started') return resume(o, open, rec.offset);
    switch (r.state) {
      case 'requested':
      case 'awaiting_approval':
        if (open || o.state.finished.includes(r.action_id) || !r.action || !r.user_id) return;
        if (r.state === 'requested') return start(o, r, rec.offset);
        return o.step([], {
          nextOffset: rec.offset + 1,
          state: { ...o.state, open: { ...o.state.open, [r.action_id]: r } },
        });
      case 'approved':
        if (open?.state === 'awaiting_approval' || open?.state === 'uncertain') {
          d.telemetry.action(r.org, open.action ?? 'unknown', 'approved', { action_id: r.action_id, by: r.by });
          return start(o, open, rec.offset, { by: r.by ?? 'unknown' });
        }
        d.telemetry.log.warn(
          { action_id: r.action_id, org: r.org, state: open?.state ?? 'unknown or finished' },
          'approval ignored: the action is not waiting for one',
        );
        return;
      default:
        // The executor's own steps, read back: already in the state.
        return;
    }
  };
}
