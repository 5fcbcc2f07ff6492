/**
 * What hooklog adds to an event before anything reads it (issue 39): the GeoIP city and AS of its
 * `client.ipAddress`, looked up once, when the event is appended to `<prefix>.logs`, and carried beside the
 * event's bytes in the `hooklog-enrichment` record header (JSON). The event's bytes stay as the service sent
 * them; the sink stores the header in the events table's `enrichment_*` columns and the rule engine shows it to
 * rules under `enrichment.*`, so both read the one answer made at append time (ARCHITECTURE.md).
 *
 * Every value comes from a file the user supplies (an MMDB), so it is treated like event data: bounded here
 * when written and again when read (a header on a Kafka topic may have been written by anyone who can write
 * there), and only the fields below, of their types, ever pass.
 */

import { Header } from '../stream/headers.js';

/** The record header that carries an event's enrichment. */
export const ENRICHMENT_HEADER = Header.enrichment;

export interface Enrichment {
  readonly geo?: {
    /** ISO 3166-1 alpha-2 as the database gives it (`FR`). */
    readonly country?: string;
    readonly city?: string;
    readonly lat?: number;
    readonly lon?: number;
  };
  readonly asn?: { readonly number?: number; readonly organization?: string };
}

/** Bounds per field, in code points: far above real values (country codes are 2, the longest city ~60). */
export const ENRICHMENT_BOUNDS = { country: 8, city: 128, organization: 256 } as const;
/** A header longer than this is not read (the bounds above keep what hooklog writes under it). */
export const MAX_ENRICHMENT_HEADER_CHARS = 2048;

/** Text of at most `max` code points (a pair is never split); not text, or empty: undefined. */
function bounded(v: unknown, max: number): string | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  const cut =
    v.length <= max
      ? v
      : Array.from(v.slice(0, max * 2))
          .slice(0, max)
          .join('');
  // A lone surrogate is no text: it becomes U+FFFD, as a UTF-8 encoder would make it anyway.
  return cut.replace(LONE_SURROGATE, '\uFFFD');
}
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function coordinate(v: unknown, limit: number): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= limit ? v : undefined;
}

function asNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffffffff ? v : undefined;
}

/** Only the known fields, of their types, within their bounds; null when nothing is left. */
export function boundEnrichment(v: unknown): Enrichment | null {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const g = o['geo'] !== null && typeof o['geo'] === 'object' ? (o['geo'] as Record<string, unknown>) : {};
  const a = o['asn'] !== null && typeof o['asn'] === 'object' ? (o['asn'] as Record<string, unknown>) : {};
  const geo = {
    ...defined('country', bounded(g['country'], ENRICHMENT_BOUNDS.country)),
    ...defined('city', bounded(g['city'], ENRICHMENT_BOUNDS.city)),
    ...defined('lat', coordinate(g['lat'], 90)),
    ...defined('lon', coordinate(g['lon'], 180)),
  };
  const asn = {
    ...defined('number', asNumber(a['number'])),
    ...defined('organization', bounded(a['organization'], ENRICHMENT_BOUNDS.organization)),
  };
  const out: { geo?: Enrichment['geo']; asn?: Enrichment['asn'] } = {};
  if (Object.keys(geo).length) out.geo = geo;
  if (Object.keys(asn).length) out.asn = asn;
  return out.geo || out.asn ? out : null;
}

function defined<K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [k]: v }) as { [P in K]?: V };
}

/** The header's text for an enrichment (bounded); null when there is nothing to carry. */
export function encodeEnrichment(e: Enrichment | null): string | null {
  const b = boundEnrichment(e);
  return b ? JSON.stringify(b) : null;
}

/** A record's enrichment: null without the header, or for one that is too long, not JSON or holds nothing known. */
export function readEnrichment(headers: Readonly<Record<string, string>>): Enrichment | null {
  const text = headers[ENRICHMENT_HEADER];
  if (text === undefined || text.length > MAX_ENRICHMENT_HEADER_CHARS) return null;
  try {
    return boundEnrichment(JSON.parse(text));
  } catch {
    return null;
  }
}

/** What an enricher answers for one address; each part optional. */
export interface GeoLookup {
  /** City (or country) database: null when none is configured or the address is not in it. */
  geo(address: string): Enrichment['geo'] | null;
  asn(address: string): Enrichment['asn'] | null;
}

const obj = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** Whether the event located its address itself: a country, city or coordinates in client.geographicalContext. */
function locatedByEvent(client: Record<string, unknown>): boolean {
  const g = obj(client['geographicalContext']);
  const loc = obj(g['geolocation']);
  return (
    (typeof g['country'] === 'string' && g['country'] !== '') ||
    (typeof g['city'] === 'string' && g['city'] !== '') ||
    typeof loc['lat'] === 'number'
  );
}

/**
 * An event's enrichment, from its `client.ipAddress`: geo unless the event located the address itself (its own
 * `client.geographicalContext` wins), the AS unless the event names it (`securityContext.asNumber`). Null when
 * there is nothing to add.
 */
export function enrichEvent(event: Readonly<Record<string, unknown>>, lookup: GeoLookup): Enrichment | null {
  const client = obj(event['client']);
  const ip = client['ipAddress'];
  if (typeof ip !== 'string' || ip === '' || ip.length > 64) return null;
  const own = obj(event['securityContext'])['asNumber'];
  const geo = locatedByEvent(client) ? null : lookup.geo(ip);
  const asn = typeof own === 'number' || (typeof own === 'string' && own !== '') ? null : lookup.asn(ip);
  return boundEnrichment({ ...(geo ? { geo } : {}), ...(asn ? { asn } : {}) });
}

/**
 * The event as rules see it: its enrichment under `enrichment` (the only source of that field). A key of the
 * event's own that the engine would read as `enrichment` (its paths ignore case and `_`) is dropped first, so a
 * rule on `enrichment.*` reads hooklog's answer or nothing, as search reads the enrichment columns.
 */
export function attachEnrichment(event: Record<string, unknown>, e: Enrichment | null): void {
  for (const k in event) if (k.length >= 10 && k.toLowerCase().replaceAll('_', '') === 'enrichment') delete event[k];
  if (e) event['enrichment'] = e;
}
