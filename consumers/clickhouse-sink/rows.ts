/**
 * Pure mapping from stream records to ClickHouse rows. No I/O here: the sink
 * feeds records in, and either inserts the row or dead-letters the record with
 * the reason returned.
 *
 * Tolerance is the rule, because real feeds are messy (see the corpus):
 * any field may be null, absent or of the wrong type. Strings are taken as
 * they are, numbers and booleans are stringified; a field that is absent,
 * null, or an object where a scalar belongs is unknown: NULL, never ''/0/false,
 * so that folding copies of one event (events_v3, migration 011) keeps the
 * value any copy knew. Only three things make a record uninsertable:
 * a value that is not a JSON object, no usable `uuid` (the dedupe key), or no
 * usable `published` (the partition key).
 */
import { isIP } from 'node:net';
import { num, obj, parseObject, str, strOrNull as text } from '../../platform/store/json.js';
import type { MapResult } from '../../platform/store/table-writer.js';
import { Header } from '../../platform/stream/headers.js';
import { readEnrichment } from '../../platform/enrichment/enrichment.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';

/**
 * One row of the events table (`events_v3`: schemas/clickhouse/011_events_v3.sql); `ingested_at` is the
 * table's default. `null` is "this copy did not say" (the wire may leave any field but uuid, published and
 * eventType out): the table folds copies keeping the known values. Array members the copy left out are ''.
 */
export interface EventRow {
  org: string;
  uuid: string;
  published: string;
  event_type: string;
  version: string | null;
  severity: string | null;
  display_message: string | null;
  legacy_event_type: string | null;
  actor_id: string | null;
  actor_type: string | null;
  actor_alternate_id: string | null;
  actor_display_name: string | null;
  /** IPv4 as a.b.c.d, IPv6 canonical; null when the event has none usable (`raw` keeps what it sent). */
  client_ip: string | null;
  client_user_agent: string | null;
  client_browser: string | null;
  client_os: string | null;
  client_zone: string | null;
  client_device: string | null;
  geo_country: string | null;
  geo_state: string | null;
  geo_city: string | null;
  geo_postal_code: string | null;
  geo_lat: number | null;
  geo_lon: number | null;
  as_number: number | null;
  as_org: string | null;
  is_proxy: boolean | null;
  outcome_result: string | null;
  outcome_reason: string | null;
  target_id: string[];
  target_type: string[];
  target_alternate_id: string[];
  target_display_name: string[];
  transaction_id: string | null;
  transaction_type: string | null;
  external_session_id: string | null;
  root_session_id: string | null;
  raw: string;
  source: string;
  hook_id: string;
  delivery_id: string;
  received_at: string;
  /** The record's `hooklog-enrichment` header (platform/enrichment/): null where it has none or not this part. */
  enrichment_country: string | null;
  enrichment_city: string | null;
  enrichment_lat: number | null;
  enrichment_lon: number | null;
  enrichment_as_number: number | null;
  enrichment_as_org: string | null;
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
export function receivedAt(rec: ConsumedRecord): string {
  return formatDateTime64(parseTimestamp(rec.headers[Header.receivedAt]) ?? rec.timestamp);
}

export const MAX_UUID_CHARS = 256;

/**
 * One spelling per address, so copies of an event and rows copied from v2 (whose IPv6 column printed
 * addresses canonically) group together: IPv4 as a.b.c.d, also when sent IPv4-mapped (`::ffff:a.b.c.d`);
 * IPv6 lower-case and compressed (RFC 5952, as the WHATWG URL parser and ClickHouse both print it).
 */
function canonicalIp(s: string): string | null {
  const family = isIP(s);
  if (family === 4) return s;
  if (family !== 6) return null;
  let host: string;
  try {
    host = new URL(`http://[${s}]/`).hostname.slice(1, -1);
  } catch {
    return s.toLowerCase(); // valid for isIP but not for a URL (a zone id): kept as sent
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (!mapped) return host;
  const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
}

/**
 * The client's address: `client.ipAddress` when it is one, else the first usable address of
 * `request.ipChain` (the service records the client first), else null — real feeds carry absent,
 * "null" or redacted addresses. The address as sent stays in `raw`.
 */
export function clientIp(v: unknown, ipChain: unknown = undefined): string | null {
  const own = canonicalIp(str(v).trim());
  if (own !== null) return own;
  for (const hop of Array.isArray(ipChain) ? ipChain : []) {
    const ip = canonicalIp(str(obj(hop).ip).trim());
    if (ip !== null) return ip;
  }
  return null;
}

/** securityContext.asNumber as a UInt32, null when absent or not a number in range. */
export function asn(v: unknown): number | null {
  const n = num(v);
  return n !== null && Number.isInteger(n) && n >= 0 && n <= 0xffff_ffff ? n : null;
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
      version: text(e.version),
      severity: text(e.severity),
      display_message: text(e.displayMessage),
      legacy_event_type: text(e.legacyEventType),
      actor_id: text(actor.id),
      actor_type: text(actor.type),
      actor_alternate_id: text(actor.alternateId),
      actor_display_name: text(actor.displayName),
      client_ip: clientIp(client.ipAddress, obj(e.request).ipChain),
      client_user_agent: text(ua.rawUserAgent),
      client_browser: text(ua.browser),
      client_os: text(ua.os),
      client_zone: text(client.zone),
      client_device: text(client.device),
      geo_country: text(geo.country),
      geo_state: text(geo.state),
      geo_city: text(geo.city),
      geo_postal_code: text(geo.postalCode),
      geo_lat: num(location.lat),
      geo_lon: num(location.lon),
      as_number: asn(security.asNumber),
      as_org: text(security.asOrg),
      is_proxy: typeof security.isProxy === 'boolean' ? security.isProxy : null,
      outcome_result: text(outcome.result),
      outcome_reason: text(outcome.reason),
      target_id: targets.map((t) => str(t.id)),
      target_type: targets.map((t) => str(t.type)),
      target_alternate_id: targets.map((t) => str(t.alternateId)),
      target_display_name: targets.map((t) => str(t.displayName)),
      transaction_id: text(transaction.id),
      transaction_type: text(transaction.type),
      external_session_id: text(auth.externalSessionId),
      root_session_id: text(auth.rootSessionId),
      raw,
      source: h[Header.source] ?? '',
      hook_id: h[Header.hookId] ?? '',
      delivery_id: h[Header.deliveryId] ?? '',
      received_at: receivedAt(rec),
      ...enrichmentColumns(rec.headers),
    },
  };
}

/** The enrichment columns of a record, from its header (read bounded and checked: readEnrichment). */
export function enrichmentColumns(
  headers: Readonly<Record<string, string>>,
): Pick<
  EventRow,
  | 'enrichment_country'
  | 'enrichment_city'
  | 'enrichment_lat'
  | 'enrichment_lon'
  | 'enrichment_as_number'
  | 'enrichment_as_org'
> {
  const e = readEnrichment(headers);
  return {
    enrichment_country: e?.geo?.country ?? null,
    enrichment_city: e?.geo?.city ?? null,
    enrichment_lat: e?.geo?.lat ?? null,
    enrichment_lon: e?.geo?.lon ?? null,
    enrichment_as_number: e?.asn?.number ?? null,
    enrichment_as_org: e?.asn?.organization ?? null,
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
