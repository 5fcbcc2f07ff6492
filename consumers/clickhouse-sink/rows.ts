/**
 * Pure mapping from stream records to ClickHouse rows. No I/O here: the sink
 * feeds records in, and either inserts the row or dead-letters the record with
 * the reason returned.
 *
 * Tolerance is the rule, because real feeds are messy (see the corpus):
 * any field may be null, absent or of the wrong type. Strings are taken as
 * they are, numbers and booleans are stringified, objects where a string is
 * expected are ignored (''). Only three things make a record uninsertable:
 * a value that is not a JSON object, no usable `uuid` (the dedupe key), or no
 * usable `published` (the partition key).
 */
import { isIP } from 'node:net';
import { num, obj, parseObject, str } from '../../platform/store/json.js';
import type { MapResult } from '../../platform/store/table-writer.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';

/** One row of `{db}.events` (v2: schemas/clickhouse/005_events_v2.sql); `ingested_at` is the table's default. */
export interface EventRow {
  org: string;
  uuid: string;
  published: string;
  event_type: string;
  version: string;
  severity: string;
  display_message: string;
  legacy_event_type: string;
  actor_id: string;
  actor_type: string;
  actor_alternate_id: string;
  actor_display_name: string;
  /** A valid IPv4/IPv6 address, or '::' when the event has none or an unparseable one (`raw` keeps it). */
  client_ip: string;
  client_user_agent: string;
  client_browser: string;
  client_os: string;
  client_zone: string;
  client_device: string;
  geo_country: string;
  geo_state: string;
  geo_city: string;
  geo_postal_code: string;
  geo_lat: number | null;
  geo_lon: number | null;
  as_number: number;
  as_org: string;
  is_proxy: boolean;
  outcome_result: string;
  outcome_reason: string;
  target_id: string[];
  target_type: string[];
  target_alternate_id: string[];
  target_display_name: string[];
  transaction_id: string;
  transaction_type: string;
  external_session_id: string;
  root_session_id: string;
  raw: string;
  source: string;
  hook_id: string;
  delivery_id: string;
  received_at: string;
}

/** One row of `{db}.arrivals` (schemas/clickhouse/010_arrivals.sql). */
export interface ArrivalRow {
  org: string;
  event_type: string;
  published: string;
  uuid: string;
  /** hook | system-log | backfill */
  path: string;
  first_received: string;
  copies: number;
  hook_id: string;
}

/** Which path brought an event, from its record's source header; null for records that are no delivery path. */
export function arrivalRow(_rec: ConsumedRecord, row: object): ArrivalRow | null {
  const e = row as EventRow;
  if (!e.source) return null;
  return {
    org: e.org,
    event_type: e.event_type,
    published: e.published,
    uuid: e.uuid,
    path: e.source,
    first_received: e.received_at,
    copies: 1,
    hook_id: e.hook_id,
  };
}

/** One row of `{db}.deadletter` (schemas/clickhouse/002_deadletter.sql). */
export interface DeadletterRow {
  received_at: string;
  origin: string;
  reason: string;
  topic: string;
  partition: number;
  offset: number;
  org: string;
  raw: string;
  dl_partition: number;
  dl_offset: number;
}

/** When hooklog received the record: the header if it parses, else the stream's timestamp. */
function receivedAt(rec: ConsumedRecord): string {
  return formatDateTime64(parseTimestamp(rec.headers[Header.receivedAt]) ?? rec.timestamp);
}

const MAX_UUID_CHARS = 256;

/**
 * The v2 table's IPv6 column refuses what is not an address, and real feeds
 * carry redacted or empty ones: those become '::' (unspecified) rather than
 * failing the row. The address as sent stays in `raw`.
 */
export function clientIp(v: unknown, ipChain: unknown = undefined): string {
  const s = str(v).trim();
  if (isIP(s) !== 0) return s;
  // No usable client address (absent, null, the string "null", redacted): the first
  // address of request.ipChain is the client's, as the service records it.
  for (const hop of Array.isArray(ipChain) ? ipChain : []) {
    const ip = str(obj(hop).ip).trim();
    if (isIP(ip) !== 0) return ip;
  }
  return '::';
}

/** securityContext.asNumber as a UInt32, 0 when absent or not a number in range. */
function asn(v: unknown): number {
  const n = num(v);
  return n !== null && Number.isInteger(n) && n >= 0 && n <= 0xffff_ffff ? n : 0;
}

/** Maps a `<prefix>.logs` record (value: one LogEvent's JSON) to an events row. */
export function mapEventRecord(rec: ConsumedRecord): MapResult<EventRow> {
  const parsed = parseObject(rec.value);
  if (!parsed.ok) return parsed;
  const { raw, value: e } = parsed;
  // One event, one key: the service's uuids are lower-case hex, and a copy that
  // reached us upper-cased (some relays do) must fold with the others. `raw` keeps it as received.
  const uuid = str(e.uuid).toLowerCase();
  if (uuid.trim() === '') return { ok: false, reason: 'event has no uuid (missing, empty or not a string)' };
  if (uuid.length > MAX_UUID_CHARS)
    return { ok: false, reason: `event uuid is longer than ${MAX_UUID_CHARS} characters` };
  const published = parseTimestamp(e.published);
  if (published === null)
    return { ok: false, reason: 'event has no usable published timestamp (missing or not ISO-8601 within 1900-2299)' };

  const actor = obj(e.actor);
  const client = obj(e.client);
  const geo = obj(client.geographicalContext);
  const location = obj(geo.geolocation);
  const outcome = obj(e.outcome);
  const transaction = obj(e.transaction);
  const auth = obj(e.authenticationContext);
  const ua = obj(client.userAgent);
  const security = obj(e.securityContext);
  const targets = Array.isArray(e.target)
    ? e.target.filter((t) => t !== null && typeof t === 'object' && !Array.isArray(t)).map(obj)
    : [];
  const h = rec.headers;
  return {
    ok: true,
    row: {
      org: h[Header.org] ?? '',
      uuid,
      published: formatDateTime64(published),
      event_type: str(e.eventType),
      version: str(e.version),
      severity: str(e.severity),
      display_message: str(e.displayMessage),
      legacy_event_type: str(e.legacyEventType),
      actor_id: str(actor.id),
      actor_type: str(actor.type),
      actor_alternate_id: str(actor.alternateId),
      actor_display_name: str(actor.displayName),
      client_ip: clientIp(client.ipAddress, obj(e.request).ipChain),
      client_user_agent: str(ua.rawUserAgent),
      client_browser: str(ua.browser),
      client_os: str(ua.os),
      client_zone: str(client.zone),
      client_device: str(client.device),
      geo_country: str(geo.country),
      geo_state: str(geo.state),
      geo_city: str(geo.city),
      geo_postal_code: str(geo.postalCode),
      geo_lat: num(location.lat),
      geo_lon: num(location.lon),
      as_number: asn(security.asNumber),
      as_org: str(security.asOrg),
      is_proxy: security.isProxy === true,
      outcome_result: str(outcome.result),
      outcome_reason: str(outcome.reason),
      target_id: targets.map((t) => str(t.id)),
      target_type: targets.map((t) => str(t.type)),
      target_alternate_id: targets.map((t) => str(t.alternateId)),
      target_display_name: targets.map((t) => str(t.displayName)),
      transaction_id: str(transaction.id),
      transaction_type: str(transaction.type),
      external_session_id: str(auth.externalSessionId),
      root_session_id: str(auth.rootSessionId),
      raw,
      source: h[Header.source] ?? '',
      hook_id: h[Header.hookId] ?? '',
      delivery_id: h[Header.deliveryId] ?? '',
      received_at: receivedAt(rec),
    },
  };
}

function offsetHeader(v: string | undefined): number {
  const n = v === undefined ? NaN : Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** The reason column leads with the error code (the header of dead letters that carry one), once. */
function reasonWithCode(reason: string, code: string | undefined): string {
  return code && !reason.startsWith(`${code}: `) ? `${code}: ${reason}` : reason;
}

/**
 * Maps a `<prefix>.deadletter` record to a deadletter row. Never refuses: a
 * dead letter is kept whatever its bytes (text that is not UTF-8 is stored
 * with replacement characters — the stream still holds the exact bytes).
 */
export function mapDeadletterRecord(rec: ConsumedRecord): MapResult<DeadletterRow> {
  const h = rec.headers;
  return {
    ok: true,
    row: {
      received_at: receivedAt(rec),
      origin: h[Header.origin] ?? '',
      reason: reasonWithCode(h[Header.reason] ?? '', h[Header.errorCode]),
      topic: h[Header.originalTopic] ?? '',
      partition: offsetHeader(h[Header.originalPartition]),
      offset: offsetHeader(h[Header.originalOffset]),
      org: h[Header.org] ?? '',
      raw: rec.value.toString('utf8'),
      dl_partition: rec.partition,
      dl_offset: rec.offset,
    },
  };
}
