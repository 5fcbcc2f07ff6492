/**
 * How the ClickHouse sink writes the response records into tables, through its
 * `extraPipelines` (batches per partition, dedup tokens, commit after insert,
 * dead letters): `<prefix>.actions` → `{db}.actions` (027), one row per step
 * of an action, and `<prefix>.ssf-deliveries` → `{db}.ssf_deliveries` (028).
 */
import type { ExtraPipeline, MapResult } from '../../platform/store/table-writer.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { parseActionRecord, type DeliveryRecord } from './records.js';

const UINT16_MAX = 65_535;
const clampUint = (v: unknown, max: number) =>
  typeof v === 'number' && Number.isFinite(v) ? Math.min(max, Math.max(0, Math.round(v))) : 0;
const str = (v: unknown) => (typeof v === 'string' ? v : '');

export function mapActionRecord(rec: ConsumedRecord): MapResult<object> {
  const parsed = parseActionRecord(rec.value);
  if (!parsed.ok) return { ok: false, reason: `not an action record: ${parsed.reason}` };
  const a = parsed.record;
  const at = parseTimestamp(a.at);
  if (at === null) return { ok: false, reason: 'action record has no usable at' };
  return {
    ok: true,
    row: {
      at: formatDateTime64(at),
      org: a.org,
      action_id: a.action_id,
      state: a.state,
      action: str(a.action),
      group_id: str(a.group_id),
      user_id: str(a.user_id),
      user_login: str(a.user_login),
      rule_id: str(a.rule_id),
      alert_id: str(a.alert_id),
      change_id: str(a.change_id),
      attempt: clampUint(a.attempt, UINT16_MAX),
      actor: str(a.by),
      status: clampUint(a.status, UINT16_MAX),
      error_code: str(a.error_code),
      error: str(a.error),
      note: str(a.note),
    },
  };
}

export function mapDeliveryRecord(rec: ConsumedRecord): MapResult<object> {
  let d: Partial<DeliveryRecord>;
  try {
    d = JSON.parse(rec.value.toString('utf8')) as Partial<DeliveryRecord>;
  } catch {
    return { ok: false, reason: 'delivery record is not JSON' };
  }
  const at = parseTimestamp(d?.at);
  if (!d || typeof d.jti !== 'string' || at === null) return { ok: false, reason: 'delivery record lacks jti/at' };
  return {
    ok: true,
    row: {
      at: formatDateTime64(at),
      org: str(d.org),
      jti: d.jti,
      change_id: str(d.change_id),
      user_id: str(d.user_id),
      user_login: str(d.user_login),
      previous_level: str(d.previous_level),
      current_level: str(d.current_level),
      rule_id: str(d.rule_id),
      alert_id: str(d.alert_id),
      result: str(d.result),
      status: clampUint(d.status, UINT16_MAX),
      err: str(d.err),
      description: str(d.description),
      attempts: clampUint(d.attempts, UINT16_MAX),
    },
  };
}

/** The sink pipeline for the actions topic: group `<sink group>.actions`, table actions. */
export function actionsPipeline(topic: string): ExtraPipeline {
  return { name: 'actions', topic, table: 'actions', map: mapActionRecord, onReject: 'deadletter' };
}

/** The sink pipeline for the SET deliveries topic: group `<sink group>.ssf-deliveries`, table ssf_deliveries. */
export function deliveriesPipeline(topic: string): ExtraPipeline {
  return { name: 'ssf-deliveries', topic, table: 'ssf_deliveries', map: mapDeliveryRecord, onReject: 'deadletter' };
}
