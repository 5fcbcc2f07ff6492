/**
 * How the ClickHouse sink writes `<prefix>.security-events` into
 * `{db}.security_events_v1` (schemas/clickhouse/025_security_events.sql, read
 * through the `security_events` view). The mapping lives with the component
 * that defines the record (set-record.ts); the sink brings the delivery
 * guarantees (batches per partition, dedup tokens, commit after insert, dead
 * letters) through its `extraPipelines` option.
 */
import type { ExtraPipeline, MapResult } from '../../platform/store/table-writer.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';

/** One row of `{db}.security_events_v1`; `ingested_at` and `keep_first` are the table's. */
export interface SecurityEventRow {
  org: string;
  receiver_id: string;
  issuer: string;
  jti: string;
  event_uuid: string;
  event_type: string;
  event_name: string;
  event_types: string[];
  event_time: string;
  issued_at: string;
  subject_format: string;
  subject_email: string;
  subject_iss: string;
  subject_sub: string;
  subject_other: string;
  session_id: string;
  txn: string;
  initiating_entity: string;
  reason_admin: string;
  reason_user: string;
  claims: string;
  set_token: string;
  alg: string;
  kid: string;
  request_id: string;
  received_at: string;
}

type Obj = Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const obj = (v: unknown): Obj => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

/** Maps a security-events record (value: set-record.ts's JSON) to a row; refuses one without its identity or times. */
export function mapSecurityEventRecord(rec: ConsumedRecord): MapResult<SecurityEventRow> {
  let v: unknown;
  try {
    v = JSON.parse(rec.value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'value is not valid JSON' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return { ok: false, reason: 'value is not a JSON object' };
  const s = v as Obj;
  const [org, issuer, jti] = [str(s.org), str(s.issuer), str(s.jti)];
  if (!org || !issuer || !jti) return { ok: false, reason: 'security event lacks org, issuer or jti' };
  const eventTime = parseTimestamp(s.event_time);
  const issuedAt = parseTimestamp(s.issued_at);
  const receivedAt = parseTimestamp(s.received_at) ?? rec.timestamp;
  if (eventTime === null || issuedAt === null)
    return { ok: false, reason: 'security event lacks event_time or issued_at' };
  const subject = obj(s.subject);
  return {
    ok: true,
    row: {
      org,
      receiver_id: str(s.receiver_id),
      issuer,
      jti,
      event_uuid: str(s.event_uuid),
      event_type: str(s.event_type),
      event_name: str(s.event_name),
      event_types: Array.isArray(s.event_types) ? s.event_types.filter((t): t is string => typeof t === 'string') : [],
      event_time: formatDateTime64(eventTime),
      issued_at: formatDateTime64(issuedAt),
      subject_format: str(subject.format),
      subject_email: str(subject.email),
      subject_iss: str(subject.iss),
      subject_sub: str(subject.sub),
      subject_other: str(subject.other),
      session_id: str(subject.session),
      txn: str(s.txn),
      initiating_entity: str(s.initiating_entity),
      reason_admin: str(s.reason_admin),
      reason_user: str(s.reason_user),
      claims: JSON.stringify(s.claims ?? {}),
      set_token: str(s.set),
      alg: str(s.alg),
      kid: str(s.kid),
      request_id: str(s.request_id),
      received_at: formatDateTime64(receivedAt),
    },
  };
}

/** The sink pipeline for the security-events topic: group `<sink group>.security-events`, table security_events_v1. */
export function securityEventsPipeline(topic: string): ExtraPipeline {
  return {
    name: 'security-events',
    topic,
    table: 'security_events_v1',
    map: mapSecurityEventRecord,
    onReject: 'deadletter',
  };
}
