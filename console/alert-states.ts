/**
 * Alert triage as records: every change an analyst makes (acknowledge, assign,
 * close with a resolution, reopen, a note) is one record appended to
 * `<prefix>.alert-states` (key = org) and written by the sink into
 * `{db}.alert_states` (migration 030) through its `extraPipelines`. Nothing is
 * updated in place: an alert's current state is the fold of its records
 * (`CURRENT_STATE_SQL`), the same on every instance of a fleet and after any
 * restart, and the records are the audit trail (who, when, what, from which
 * request).
 */
import { randomUUID } from 'node:crypto';
import type { ExtraPipeline, MapResult } from '../platform/store/table-writer.js';
import type { ConsumedRecord, StreamRecord } from '../platform/stream/types.js';
import { formatDateTime64, parseTimestamp } from '../platform/time.js';
import type { Principal } from '../platform/access.js';
import {
  ACTIONS,
  RESOLUTIONS,
  STATUSES,
  type Action,
  type AlertStatus,
  type ChangeRequest,
  type Resolution,
} from './lifecycle.js';

export {
  ACTIONS,
  RESOLUTIONS,
  STATUSES,
  refuseTransition,
  type Action,
  type AlertStatus,
  type ChangeRequest,
  type Resolution,
} from './lifecycle.js';

/** The topic's name under a prefix. */
export function alertStatesTopic(prefix: string): string {
  return `${prefix}.alert-states`;
}

/** One change, as on the topic (public contract: fields never change meaning). */
export interface AlertStateRecord {
  readonly change_id: string;
  readonly org: string;
  readonly alert_id: string;
  /** ISO-8601 time the change was made. */
  readonly at: string;
  readonly action: Action;
  /** The status this change sets, or '' (assign, comment). */
  readonly status: AlertStatus | '';
  /** With status closed: why. Otherwise ''. */
  readonly resolution: Resolution | '';
  /** The assignee this change sets ('' unassigns), or null when it does not touch it. */
  readonly assignee: string | null;
  readonly note: string;
  /** Who: the principal's id (user subject or key name), its display name and kind. */
  readonly actor: string;
  readonly actor_name: string;
  readonly actor_kind: Principal['kind'];
  readonly request_id: string;
}

export const MAX_NOTE_CHARS = 4000;

/** The record for a change to one alert; the caller has checked the transition. */
export function changeRecord(
  org: string,
  alertId: string,
  change: ChangeRequest,
  who: Principal,
  requestId: string,
  now: number,
): AlertStateRecord {
  const status: AlertStatus | '' =
    change.action === 'acknowledge'
      ? 'acknowledged'
      : change.action === 'close'
        ? 'closed'
        : change.action === 'reopen'
          ? 'open'
          : '';
  return {
    change_id: randomUUID(),
    org,
    alert_id: alertId,
    at: new Date(now).toISOString(),
    action: change.action,
    status,
    resolution: change.action === 'close' ? (change.resolution ?? '') : '',
    assignee: change.action === 'assign' ? (change.assignee ?? '') : null,
    note: (change.note ?? '').slice(0, MAX_NOTE_CHARS),
    actor: who.id,
    actor_name: who.name,
    actor_kind: who.kind,
    request_id: requestId,
  };
}

export function toStreamRecord(r: AlertStateRecord): StreamRecord {
  return { key: r.org, value: Buffer.from(JSON.stringify(r)), headers: { 'hooklog-org': r.org } };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const oneOf = <T extends string>(list: readonly T[], v: unknown): v is T => list.includes(v as T);

/** A record → an `alert_states` row; records that are not a change are refused (dead-lettered by the sink). */
export function mapAlertStateRecord(rec: ConsumedRecord): MapResult<object> {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(rec.value.toString('utf8')) as Record<string, unknown>;
  } catch {
    return { ok: false, reason: 'alert state record is not JSON' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return { ok: false, reason: 'alert state record is not an object' };
  const at = parseTimestamp(v.at);
  if (!str(v.change_id) || !str(v.alert_id) || !str(v.org) || at === null)
    return { ok: false, reason: 'alert state record lacks change_id, alert_id, org or at' };
  if (!oneOf(ACTIONS, v.action)) return { ok: false, reason: 'alert state record has an unknown action' };
  if (v.status !== '' && !oneOf(STATUSES, v.status)) return { ok: false, reason: 'unknown status' };
  if (v.resolution !== '' && !oneOf(RESOLUTIONS, v.resolution)) return { ok: false, reason: 'unknown resolution' };
  return {
    ok: true,
    row: {
      at: formatDateTime64(at),
      org: v.org,
      alert_id: v.alert_id,
      change_id: v.change_id,
      action: v.action,
      status: v.status,
      resolution: v.resolution,
      assignee: typeof v.assignee === 'string' ? v.assignee : null,
      note: str(v.note).slice(0, MAX_NOTE_CHARS),
      actor: str(v.actor),
      actor_name: str(v.actor_name),
      actor_kind: str(v.actor_kind),
      request_id: str(v.request_id),
    },
  };
}

/** The sink's pipeline for the topic (cli/ hands it to the sink when the console is on). */
export function alertStatesPipeline(topic: string): ExtraPipeline {
  return { name: 'alert-states', topic, table: 'alert_states', map: mapAlertStateRecord, onReject: 'deadletter' };
}

/**
 * The current state (`state_status`, `state_resolution`, `state_assignee`,
 * `state_updated_at`) of every alert with a record, among the alerts `where`
 * selects (a condition on org and alert_id with bound parameters): the status
 * and resolution of the latest status change, the latest assignee. Ties in
 * time are broken by change_id, so every instance folds the same way.
 */
export function currentStateSql(db: string, where: string): string {
  return `SELECT org, alert_id,
       argMaxIf(status, (at, change_id), status != '') AS state_status,
       argMaxIf(resolution, (at, change_id), status != '') AS state_resolution,
       argMaxIf(assignee, (at, change_id), assignee IS NOT NULL) AS state_assignee,
       toString(max(at)) AS state_updated_at
FROM ${db}.alert_states FINAL
WHERE ${where}
GROUP BY org, alert_id`;
}
