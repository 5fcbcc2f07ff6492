/**
 * What an accepted SET becomes on the stream, appended in one atomic write:
 *
 * - `<prefix>.security-events`: the SET itself (value: JSON with the verified
 *   claims as sent, the compact token as received, and the summary hooklog
 *   derived: event name and time, subject), stored by the sink in
 *   `security_events_v1` (read through the `security_events` view).
 * - `<prefix>.logs`: the same event as a LogEvent (eventType e.g.
 *   `security.events.caep.session_revoked`, actor = the subject user), so
 *   every rule language, the risk engine and `hooklog query` see it the way
 *   they see the System Log, in the org's order, without a second input to
 *   the rule engine. It is marked `hooklog-source: ssf`; its uuid derives from
 *   (issuer, jti), so a repeated SET folds into one row wherever it lands.
 *
 * Pure: no I/O, the clock passed in.
 */
import { createHash } from 'node:crypto';
import { Header } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { subjectOf, summarizeSubject, userId, userLogin, type SubjectSummary } from './subject.js';
import type { SetClaims } from './verify.js';

/** The `hooklog-source` of records from SSF receivers. */
export const SSF_SOURCE = 'ssf';
/** Dead letters of refused SETs name this origin. */
export const SSF_ORIGIN = 'ssf-receiver';
/** Headers of SSF records: the RFC 8935 err of a refusal, and the SET's jti. */
export const SET_ERR_HEADER = 'hooklog-set-err';
export const REQUEST_ID_HEADER = 'hooklog-request-id';

export interface AcceptedSet {
  readonly receiverId: string;
  readonly org: string;
  readonly token: string;
  readonly claims: SetClaims;
  readonly alg: string;
  readonly kid: string | undefined;
  readonly receivedAt: Date;
  readonly requestId: string;
}

/** The value of a `<prefix>.security-events` record (snake_case JSON, a public contract like the topic). */
export interface SecurityEventValue {
  readonly receiver_id: string;
  readonly org: string;
  readonly issuer: string;
  readonly jti: string;
  /** The uuid of the LogEvent appended beside it (join key to the events table). */
  readonly event_uuid: string;
  /** The SET's first event type URI, and all of them. */
  readonly event_type: string;
  readonly event_types: readonly string[];
  readonly event_name: string;
  /** ISO-8601: the event's `event_timestamp` when it has a usable one, else the SET's iat. */
  readonly event_time: string;
  readonly issued_at: string;
  readonly subject: SubjectSummary;
  readonly txn: string;
  readonly initiating_entity: string;
  readonly reason_admin: string;
  readonly reason_user: string;
  readonly claims: SetClaims;
  readonly set: string;
  readonly alg: string;
  readonly kid: string;
  readonly received_at: string;
  readonly request_id: string;
}

const str = (v: unknown, max = 1024): string => (typeof v === 'string' ? v.slice(0, max) : '');
type Obj = Readonly<Record<string, unknown>>;
const obj = (v: unknown): Obj => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

/**
 * A LogEvent eventType for a SET event type URI: `…/secevent/<profile>/event-type/<name>` →
 * `security.events.<profile>.<name>` with dashes as underscores; any other URI → `security.events.other`.
 */
export function eventNameOf(uri: string): string {
  const m = /\/secevent\/([A-Za-z0-9-]+)\/event-type\/([A-Za-z0-9_-]+)\/?$/.exec(uri);
  if (!m) return 'security.events.other';
  const part = (s: string) => s.toLowerCase().replaceAll('-', '_');
  return `security.events.${part(m[1]!)}.${part(m[2]!)}`;
}

/** A stable UUID (RFC 9562 version 8, from SHA-256) for the SET (issuer, jti): every copy gets the same. */
export function eventUuid(issuer: string, jti: string): string {
  const h = createHash('sha256').update(`ssf\n${issuer}\n${jti}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** Unix seconds → ISO-8601, or undefined outside 1970..2299 (a made-up timestamp is not trusted as event time). */
function isoFromSeconds(s: unknown): string | undefined {
  if (typeof s !== 'number' || !Number.isFinite(s) || s < 0 || s > 10_413_792_000) return undefined;
  return new Date(Math.round(s * 1000)).toISOString();
}

/** `{en: text}` or a plain string, as CAEP's reason_admin / reason_user are sent. */
function reasonText(v: unknown): string {
  if (typeof v === 'string') return v.slice(0, 1024);
  const o = obj(v);
  return str(o.en) || str(Object.values(o).find((x) => typeof x === 'string'));
}

export function securityEventValue(a: AcceptedSet): SecurityEventValue {
  const types = Object.keys(a.claims.events);
  const type = types[0]!;
  const event = obj(a.claims.events[type]);
  const issuedAt = isoFromSeconds(a.claims.iat) ?? a.receivedAt.toISOString();
  return {
    receiver_id: a.receiverId,
    org: a.org,
    issuer: a.claims.iss,
    jti: a.claims.jti,
    event_uuid: eventUuid(a.claims.iss, a.claims.jti),
    event_type: type,
    event_types: types,
    event_name: eventNameOf(type),
    event_time: isoFromSeconds(event.event_timestamp) ?? issuedAt,
    issued_at: issuedAt,
    subject: summarizeSubject(subjectOf(a.claims, event)),
    txn: str(a.claims.txn),
    initiating_entity: str(event.initiating_entity, 64),
    reason_admin: reasonText(event.reason_admin),
    reason_user: reasonText(event.reason_user),
    claims: a.claims,
    set: a.token,
    alg: a.alg,
    kid: a.kid ?? '',
    received_at: a.receivedAt.toISOString(),
    request_id: a.requestId,
  };
}

/** The LogEvent the rules see. Fields a System Log event would carry and a SET does not are left out, not faked. */
export function logEventOf(v: SecurityEventValue): Record<string, unknown> {
  const event = obj(v.claims.events[v.event_type]);
  const id = userId(v.subject);
  const debugData: Record<string, string> = {
    receiverId: v.receiver_id,
    issuer: v.issuer,
    jti: v.jti,
    setEventType: v.event_type,
  };
  const optional: Array<[string, unknown]> = [
    ['txn', v.txn],
    ['initiatingEntity', v.initiating_entity],
    ['reasonAdmin', v.reason_admin],
    ['reasonUser', v.reason_user],
    ['credentialType', str(event.credential_type, 64)],
    ['changeType', str(event.change_type, 64)],
    ['friendlyName', str(event.friendly_name)],
    ['subjectFormat', v.subject.format],
  ];
  for (const [k, val] of optional) if (typeof val === 'string' && val !== '') debugData[k] = val;
  return {
    uuid: v.event_uuid,
    published: v.event_time,
    eventType: v.event_name,
    version: '0',
    severity: 'INFO',
    displayMessage: `Shared Signals event received: ${v.event_name.slice('security.events.'.length).replaceAll('_', ' ')}`,
    ...(id ? { actor: { id, type: 'User', alternateId: userLogin(v.subject), displayName: null } } : {}),
    outcome: { result: 'SUCCESS', reason: v.reason_admin || null },
    target: [{ id: v.issuer, type: 'SecurityEventsProvider', alternateId: v.receiver_id, displayName: v.issuer }],
    transaction: { type: 'SSF', id: v.jti, detail: {} },
    ...(v.subject.session ? { authenticationContext: { externalSessionId: v.subject.session } } : {}),
    debugContext: { debugData },
  };
}

/** The two records of an accepted SET, for one atomic append. */
export function setRecords(a: AcceptedSet): { set: StreamRecord; logEvent: StreamRecord; value: SecurityEventValue } {
  const value = securityEventValue(a);
  const headers = {
    [Header.org]: a.org,
    [Header.source]: SSF_SOURCE,
    [Header.hookId]: a.receiverId,
    [Header.deliveryId]: value.jti.slice(0, 256),
    [Header.receivedAt]: value.received_at,
    [REQUEST_ID_HEADER]: a.requestId,
  };
  return {
    value,
    set: { key: a.org, value: Buffer.from(JSON.stringify(value)), headers },
    logEvent: { key: a.org, value: Buffer.from(JSON.stringify(logEventOf(value))), headers },
  };
}
