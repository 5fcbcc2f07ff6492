/**
 * The sink's fast path: a `<prefix>.logs` record straight to its events row as TabSeparated bytes, copying
 * the event's own bytes wherever a column is a JSON string as sent (its arrivals row is ClickHouse's to write,
 * from this one: migration 032).
 *
 * The columns are rows.ts's, value for value: rows.ts (`mapEventRecord`) stays the readable statement of
 * what each column holds, and event-tsv.test.ts holds this encoder to it, on the rows ClickHouse stores
 * from either. Only the uncommon cases decode anything: a string with escapes, a number where text
 * belongs, the client address and the keys (uuid, published).
 */
import { num, str } from '../../platform/store/json.js';
import type { TsvWriter } from '../../platform/store/tsv.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { formatDateTime64, isCanonicalTimestamp, parseTimestamp } from '../../platform/time.js';
import { Kind, TARGET_INTS, leaf, scanEvent, type Scanned } from './event-scan.js';
import { MAX_UUID_CHARS, asn, clientIp, enrichmentColumns, receivedAt } from './rows.js';
import { ENRICHMENT_HEADER } from '../../platform/enrichment/enrichment.js';
import { RepeatedText, plainIpv4, plainUuid, writeCanonicalPublished, writeLowerAscii } from './event-bytes.js';

/** The events table's columns in the order event rows are written (all but `ingested_at`, its default). */
export const EVENT_COLUMNS = [
  'org',
  'uuid',
  'published',
  'event_type',
  'version',
  'severity',
  'display_message',
  'legacy_event_type',
  'actor_id',
  'actor_type',
  'actor_alternate_id',
  'actor_display_name',
  'client_ip',
  'client_user_agent',
  'client_browser',
  'client_os',
  'client_zone',
  'client_device',
  'geo_country',
  'geo_state',
  'geo_city',
  'geo_postal_code',
  'geo_lat',
  'geo_lon',
  'as_number',
  'as_org',
  'is_proxy',
  'outcome_result',
  'outcome_reason',
  'target_id',
  'target_type',
  'target_alternate_id',
  'target_display_name',
  'transaction_id',
  'transaction_type',
  'external_session_id',
  'root_session_id',
  'source',
  'hook_id',
  'delivery_id',
  'received_at',
  'enrichment_country',
  'enrichment_city',
  'enrichment_lat',
  'enrichment_lon',
  'enrichment_as_number',
  'enrichment_as_org',
  'raw',
] as const;

/** The text columns between legacy_event_type and client_ip, and the ones after it, by their leaves. */
const TEXT_LEAVES_1 = [
  'version',
  'severity',
  'displayMessage',
  'legacyEventType',
  'actor.id',
  'actor.type',
  'actor.alternateId',
  'actor.displayName',
] as const;
const TEXT_LEAVES_2 = [
  'client.userAgent.rawUserAgent',
  'client.userAgent.browser',
  'client.userAgent.os',
  'client.zone',
  'client.device',
  'client.geographicalContext.country',
  'client.geographicalContext.state',
  'client.geographicalContext.city',
  'client.geographicalContext.postalCode',
] as const;
const TEXT_LEAVES_3 = [
  'transaction.id',
  'transaction.type',
  'authenticationContext.externalSessionId',
  'authenticationContext.rootSessionId',
] as const;
const T1 = TEXT_LEAVES_1.map(leaf);
const T2 = TEXT_LEAVES_2.map(leaf);
const T3 = TEXT_LEAVES_3.map(leaf);
const UUID = leaf('uuid');
const PUBLISHED = leaf('published');
const EVENT_TYPE = leaf('eventType');
const IP = leaf('client.ipAddress');
const LAT = leaf('client.geographicalContext.geolocation.lat');
const LON = leaf('client.geographicalContext.geolocation.lon');
const ASN = leaf('securityContext.asNumber');
const AS_ORG = leaf('securityContext.asOrg');
const PROXY = leaf('securityContext.isProxy');
const RESULT = leaf('outcome.result');
const REASON = leaf('outcome.reason');

let src: Uint8Array = new Uint8Array(0);

/** The value at a slot as JSON.parse gives it, for the few columns that compute (objects and arrays stand empty). */
function value(s: Int32Array, at: number): unknown {
  switch (s[at]) {
    case Kind.STRING:
      return Buffer.from(src.buffer, src.byteOffset + s[at + 1]! + 1, s[at + 2]! - s[at + 1]! - 2).toString('utf8');
    case Kind.STRING_ESCAPED:
    case Kind.NUMBER:
      return JSON.parse(Buffer.from(src.buffer, src.byteOffset + s[at + 1]!, s[at + 2]! - s[at + 1]!).toString('utf8'));
    case Kind.TRUE:
      return true;
    case Kind.FALSE:
      return false;
    case Kind.NULL:
      return null;
    case Kind.OBJECT:
      return {};
    case Kind.ARRAY:
      return [];
    default:
      return undefined;
  }
}

/**
 * A text column (rows.ts `strOrNull`, or with `orEmpty` `str`): a string as sent, a finite number or a
 * boolean as text; anything else NULL (or '').
 */
function textColumn(w: TsvWriter, s: Int32Array, at: number, orEmpty: boolean): void {
  const kind = s[at];
  if (kind === Kind.STRING) w.bytes(src, s[at + 1]! + 1, s[at + 2]! - 1);
  else if (kind === Kind.STRING_ESCAPED || kind === Kind.NUMBER) {
    const v = value(s, at);
    const t = str(v);
    if (t === '' && typeof v !== 'string' && !orEmpty) w.nil();
    else w.text(t);
  } else if (kind === Kind.TRUE) w.plain('true');
  else if (kind === Kind.FALSE) w.plain('false');
  else if (!orEmpty) w.nil();
}

/** A target column: Array(String) of one leaf of every object in `target`, `str` of each. */
function targetColumn(w: TsvWriter, scan: Scanned, index: number): void {
  const t = scan.targetSlots;
  w.byte(0x5b);
  for (let k = 0; k < scan.targets; k++) {
    if (k > 0) w.byte(0x2c);
    const at = k * TARGET_INTS + index * 3;
    if (t[at] === Kind.STRING) w.quotedBytes(src, t[at + 1]! + 1, t[at + 2]! - 1);
    else w.quoted(str(value(t, at)));
  }
  w.byte(0x5d);
}

function numberColumn(w: TsvWriter, n: number | null): void {
  if (n === null) w.nil();
  else w.plain(String(n));
}

/** rows.ts clientIp: the address when usable, else the first usable hop of request.ipChain. */
function clientIpColumn(w: TsvWriter, scan: Scanned): void {
  const s = scan.slots;
  const at = IP * 3;
  if (s[at] === Kind.STRING && plainIpv4(src, s[at + 1]! + 1, s[at + 2]! - 1)) {
    w.bytes(src, s[at + 1]! + 1, s[at + 2]! - 1);
    return;
  }
  let ip = s[IP * 3] === Kind.ABSENT ? null : clientIp(value(s, IP * 3));
  if (ip === null && scan.hops > 0) {
    const hops = Array.from({ length: scan.hops }, (_, k) => ({ ip: value(scan.hopSlots, k * 3) }));
    ip = clientIp(undefined, hops);
  }
  if (ip === null) w.nil();
  else w.text(ip);
}

/** `received_at` as DateTime64 text, re-used while records repeat the same receipt header. */
let lastReceivedHeader: string | undefined;
let lastReceived = '';
/** Header columns, kept encoded while their values repeat. */
const ORG = new RepeatedText();
const SOURCE = new RepeatedText();
const HOOK = new RepeatedText();
const DELIVERY = new RepeatedText();
const RECEIVED = new RepeatedText();

/** Appends `rec`'s events row to `w`: null when written, else why the record cannot be stored (writing nothing). */
export function encodeEvent(rec: ConsumedRecord, w: TsvWriter): string | null {
  const scanned = scanEvent(rec.value);
  if (!scanned.ok) return scanned.reason;
  const scan = scanned.scan;
  const s = scan.slots;
  src = rec.value;
  try {
    // The keys first, so a refused record writes nothing: their usual forms are copied from the bytes.
    const u = UUID * 3;
    const uuidPlain = s[u] === Kind.STRING && plainUuid(src, s[u + 1]! + 1, s[u + 2]! - 1);
    let uuid = '';
    if (!uuidPlain) {
      uuid = str(value(s, u)).toLowerCase();
      if (uuid.trim() === '') return 'event has no uuid (missing, empty or not a string)';
      if (uuid.length > MAX_UUID_CHARS) return `event uuid is longer than ${MAX_UUID_CHARS} characters`;
    }
    const p = PUBLISHED * 3;
    const publishedPlain = s[p] === Kind.STRING && isCanonicalTimestamp(src, s[p + 1]! + 1, s[p + 2]! - 1);
    let published = '';
    if (!publishedPlain) {
      const epoch = s[p] === Kind.ABSENT ? null : parseTimestamp(value(s, p));
      if (epoch === null) return 'event has no usable published timestamp (missing or not ISO-8601 within 1900-2299)';
      published = formatDateTime64(epoch);
    }
    const h = rec.headers;
    const receivedHeader = h[Header.receivedAt];
    if (receivedHeader === undefined || receivedHeader !== lastReceivedHeader) {
      lastReceived = receivedAt(rec);
      // Only a header that parsed decides alone; without one the record's own timestamp does.
      lastReceivedHeader =
        receivedHeader !== undefined && parseTimestamp(receivedHeader) !== null ? receivedHeader : undefined;
    }

    ORG.write(w, h[Header.org] ?? '');
    w.tab();
    if (uuidPlain) writeLowerAscii(w, src, s[u + 1]! + 1, s[u + 2]! - 1);
    else w.text(uuid);
    w.tab();
    if (publishedPlain) writeCanonicalPublished(w, src, s[p + 1]! + 1);
    else w.plain(published);
    w.tab();
    textColumn(w, s, EVENT_TYPE * 3, true);
    for (const at of T1) {
      w.tab();
      textColumn(w, s, at * 3, false);
    }
    w.tab();
    clientIpColumn(w, scan);
    for (const at of T2) {
      w.tab();
      textColumn(w, s, at * 3, false);
    }
    w.tab();
    numberColumn(w, s[LAT * 3] === Kind.ABSENT ? null : num(value(s, LAT * 3)));
    w.tab();
    numberColumn(w, s[LON * 3] === Kind.ABSENT ? null : num(value(s, LON * 3)));
    w.tab();
    numberColumn(w, s[ASN * 3] === Kind.ABSENT ? null : asn(value(s, ASN * 3)));
    w.tab();
    textColumn(w, s, AS_ORG * 3, false);
    w.tab();
    const proxy = s[PROXY * 3];
    if (proxy === Kind.TRUE) w.plain('true');
    else if (proxy === Kind.FALSE) w.plain('false');
    else w.nil();
    w.tab();
    textColumn(w, s, RESULT * 3, false);
    w.tab();
    textColumn(w, s, REASON * 3, false);
    for (let t = 0; t < 4; t++) {
      w.tab();
      targetColumn(w, scan, t);
    }
    for (const at of T3) {
      w.tab();
      textColumn(w, s, at * 3, false);
    }
    w.tab();
    SOURCE.write(w, h[Header.source] ?? '');
    w.tab();
    HOOK.write(w, h[Header.hookId] ?? '');
    w.tab();
    DELIVERY.write(w, h[Header.deliveryId] ?? '');
    w.tab();
    RECEIVED.write(w, lastReceived);
    w.tab();
    enrichmentColumnsTsv(w, h);
    if (scan.needsEscape) w.escapedBytes(src, 0, src.length);
    else w.bytes(src, 0, src.length);
    w.endRow();
    return null;
  } finally {
    src = EMPTY;
  }
}
const EMPTY = new Uint8Array(0);

/** The six enrichment columns, each followed by its tab: NULLs without the header (the usual record, no work). */
function enrichmentColumnsTsv(w: TsvWriter, h: Readonly<Record<string, string>>): void {
  if (h[ENRICHMENT_HEADER] === undefined) {
    for (let i = 0; i < 6; i++) {
      w.nil();
      w.tab();
    }
    return;
  }
  const c = enrichmentColumns(h);
  for (const v of [c.enrichment_country, c.enrichment_city]) {
    if (v === null) w.nil();
    else w.text(v);
    w.tab();
  }
  numberColumn(w, c.enrichment_lat);
  w.tab();
  numberColumn(w, c.enrichment_lon);
  w.tab();
  numberColumn(w, c.enrichment_as_number);
  w.tab();
  if (c.enrichment_as_org === null) w.nil();
  else w.text(c.enrichment_as_org);
  w.tab();
}
