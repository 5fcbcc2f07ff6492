/**
 * The response component's records on the stream. Public like every topic:
 * fields never change meaning.
 *
 * - `<prefix>.actions`, key = org: the life of each action, one record per
 *   step, each carrying the whole action (`requested` or `awaiting_approval`
 *   or `dry_run` or `not_allowed` when decided; `approved` when an operator
 *   approves, written by `hooklog actions approve`; `started` before the
 *   management call; `done`, `failed` or `uncertain` after it; `cancelled`
 *   when the org's mode no longer allows it). The executor reads this topic,
 *   so an approval reaches the partition that holds the action.
 * - `<prefix>.ssf-deliveries`, key = org: one record per SET delivered or
 *   refused, with the receiver's `err`.
 * - `<prefix>.response-sets-state`, `<prefix>.response-actions-state` (compacted): the consumers'
 *   checkpoints (checkpoint.ts).
 */
import { z } from 'zod';
import { Header } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { ACTION_NAMES } from './config.js';

export function responseTopics(prefix: string) {
  return {
    actions: `${prefix}.actions`,
    deliveries: `${prefix}.ssf-deliveries`,
    /** The transmitter's checkpoints (compacted, one partition per risk-changes partition). */
    setsState: `${prefix}.response-sets-state`,
    /** The executor's checkpoints (compacted, one partition per actions partition). */
    actionsState: `${prefix}.response-actions-state`,
  } as const;
}
export type ResponseTopics = ReturnType<typeof responseTopics>;

export const ACTION_STATES = [
  'requested',
  'awaiting_approval',
  'dry_run',
  'not_allowed',
  'approved',
  'started',
  'done',
  'failed',
  'uncertain',
  'cancelled',
] as const;
export const actionRecordSchema = z.strictObject({
  /** Stable id of (org, alert, cause, action): the same decision made twice has the same id. */
  action_id: z.string().regex(/^[0-9a-f]{32}$/),
  org: z.string().min(1),
  state: z.enum(ACTION_STATES),
  /** ISO-8601 time of this step. */
  at: z.string(),
  action: z.enum(ACTION_NAMES).optional(),
  group_id: z.string().optional(),
  user_id: z.string().optional(),
  user_login: z.string().optional(),
  rule_id: z.string().optional(),
  alert_id: z.string().optional(),
  change_id: z.string().optional(),
  /**
   * HTTP requests of management calls made for this action so far, the client's retries (5xx, 429, network)
   * included: on `started` the number its first request will be, on a result every request made by then. A call
   * a crash cut short counts as one.
   */
  attempt: z.number().int().min(0).optional(),
  /** Who approved (approved). */
  by: z.string().max(200).optional(),
  /** HTTP status of the management call (done, failed). */
  status: z.number().int().optional(),
  /** The service's errorCode, and its summary and causes (failed). */
  error_code: z.string().optional(),
  error: z.string().max(2000).optional(),
  note: z.string().max(500).optional(),
});
export type ActionRecord = z.output<typeof actionRecordSchema>;

export function actionStreamRecord(r: ActionRecord): StreamRecord {
  return {
    key: r.org,
    value: Buffer.from(JSON.stringify(r)),
    headers: { [Header.org]: r.org, 'hooklog-action-id': r.action_id, 'hooklog-action-state': r.state },
  };
}

/** The action record a stream record holds, or why not. */
export function parseActionRecord(value: Buffer): { ok: true; record: ActionRecord } | { ok: false; reason: string } {
  let v: unknown;
  try {
    v = JSON.parse(value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'value is not JSON' };
  }
  const parsed = actionRecordSchema.safeParse(v);
  if (!parsed.success) return { ok: false, reason: parsed.error.issues[0]?.message ?? 'not an action record' };
  return { ok: true, record: parsed.data };
}

/** A `<prefix>.ssf-deliveries` value: what became of one SET. */
export interface DeliveryRecord {
  readonly org: string;
  readonly change_id: string;
  readonly jti: string;
  readonly user_id: string;
  readonly user_login: string;
  readonly previous_level: string;
  readonly current_level: string;
  readonly rule_id: string;
  readonly alert_id: string;
  /** accepted (2xx) or refused (4xx: dead-lettered). */
  readonly result: 'accepted' | 'refused';
  readonly status: number;
  readonly err: string;
  readonly description: string;
  /**
   * HTTP requests pushing this SET made by the instance that recorded the answer: the client's retries (5xx, 429,
   * network) and the deliveries offered again included, the answered one last. An earlier instance's pushes (it
   * crashed before recording) are not counted.
   */
  readonly attempts: number;
  readonly at: string;
}

export function deliveryStreamRecord(d: DeliveryRecord): StreamRecord {
  return { key: d.org, value: Buffer.from(JSON.stringify(d)), headers: { [Header.org]: d.org, 'hooklog-jti': d.jti } };
}
