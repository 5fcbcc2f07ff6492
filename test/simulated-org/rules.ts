/**
 * The documented request rules of /api/v1/logs and /api/v1/events
 * (protocols.md §3, §4), enforced strictly: what the real service would
 * reject, the simulated org rejects, with the service's error codes.
 * Requests the service would accept but that break hooklog's own polling
 * rules (limit other than 1000, `until` on a polling request, …) are
 * answered and recorded as breaches.
 */
import type { StoredEvent } from './store.js';

export interface Rejection {
  readonly status: number;
  readonly errorCode: string;
  readonly summary: string;
}

export type Checked<T> = { ok: true; value: T; breaches: string[] } | { ok: false; rejection: Rejection };

const DAY = 86_400_000;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$/;
const LEGACY_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(Z|[+-]\d{4})$/;

const invalid = (summary: string): Rejection => ({
  status: 400,
  errorCode: 'E0000001',
  summary: `Api validation failed: ${summary}`,
});

/** One value per parameter, only known parameters. */
function single(q: URLSearchParams, allowed: readonly string[]): Rejection | null {
  const seen = new Set<string>();
  for (const k of q.keys()) {
    if (!allowed.includes(k)) return invalid(`unknown parameter ${k}`);
    if (seen.has(k)) return invalid(`parameter ${k} given more than once`);
    seen.add(k);
  }
  return null;
}

function parseLimit(v: string | null, fallback: number): number | Rejection {
  if (v === null) return fallback;
  if (!/^\d{1,4}$/.test(v) || Number(v) > 1000) return invalid('limit must be an integer between 0 and 1000');
  return Number(v);
}

export interface LogsQuery {
  readonly since: number | null;
  readonly until: number | null;
  readonly after: string | null;
  readonly limit: number;
  readonly filter: string | null;
  readonly descending: boolean;
}

export function checkLogsQuery(q: URLSearchParams, now: number, maxSinceMs: number): Checked<LogsQuery> {
  const bad = single(q, ['since', 'until', 'after', 'filter', 'q', 'limit', 'sortOrder']);
  if (bad) return { ok: false, rejection: bad };
  const breaches: string[] = [];
  const limit = parseLimit(q.get('limit'), 100);
  if (typeof limit !== 'number') return { ok: false, rejection: limit };
  if (limit !== 1000) breaches.push(`limit=${limit} (hooklog always asks for 1000)`);
  const times: Record<'since' | 'until', number | null> = { since: null, until: null };
  for (const k of ['since', 'until'] as const) {
    const v = q.get(k);
    if (v === null) continue;
    if (!ISO.test(v) || Number.isNaN(Date.parse(v)))
      return { ok: false, rejection: invalid(`${k} must be an ISO 8601 timestamp`) };
    times[k] = Date.parse(v);
  }
  if (times.since !== null && times.since < now - maxSinceMs) {
    return {
      ok: false,
      rejection: {
        status: 400,
        errorCode: 'E0000053',
        summary: `Invalid since: the value must be within the last ${Math.round(maxSinceMs / DAY)} days`,
      },
    };
  }
  // A bounded query (since and until: reconcile windows, backfill) is hooklog's own; until alone is a mistake.
  if (times.until !== null && times.since === null)
    breaches.push('until without since (a bounded query reaching 7 days back)');
  const filter = q.get('filter');
  if (filter !== null && /\bpublished\b/i.test(filter))
    return { ok: false, rejection: invalid('filter may not use published') };
  if (filter !== null && !/^eventType eq "[^"]*"( or eventType eq "[^"]*")*$/.test(filter))
    return { ok: false, rejection: invalid(`unsupported filter ${filter}`) };
  const sort = q.get('sortOrder') ?? 'ASCENDING';
  if (sort !== 'ASCENDING' && sort !== 'DESCENDING')
    return { ok: false, rejection: invalid('sortOrder must be ASCENDING or DESCENDING') };
  if (sort === 'DESCENDING') breaches.push('sortOrder=DESCENDING on a polling request');
  return {
    ok: true,
    value: { ...times, after: q.get('after'), limit, filter, descending: sort === 'DESCENDING' },
    breaches,
  };
}

export interface LegacyClause {
  readonly field: 'action.objectType' | 'target.objectType' | 'target.id' | 'published';
  readonly op: 'eq' | 'lt' | 'gt';
  readonly value: string;
}

/** The legacy filter grammar: documented clauses joined by `and`; anything else is refused. */
export function parseLegacyFilter(filter: string): LegacyClause[] | Rejection {
  const clauses: LegacyClause[] = [];
  for (const part of filter.trim().split(/\s+and\s+/i)) {
    const m = /^(action\.objectType|target\.objectType|target\.id|published)\s+(eq|lt|gt)\s+"([^"\\]*)"$/.exec(
      part.trim(),
    );
    if (!m) return invalid(`invalid filter clause ${part.trim()}`);
    const [, field, op, value] = m as unknown as [string, LegacyClause['field'], LegacyClause['op'], string];
    if (field === 'published' && !LEGACY_DATE.test(value))
      return invalid(`published must be yyyy-MM-dd'T'HH:mm:ss.SSSZ, got ${value}`);
    if (field !== 'published' && op !== 'eq') return invalid(`${field} supports eq only`);
    clauses.push({ field, op, value });
  }
  return clauses;
}

export function matchesLegacy(e: StoredEvent, clauses: readonly LegacyClause[]): boolean {
  return clauses.every((c) => {
    switch (c.field) {
      case 'action.objectType':
        return e.objectType === c.value;
      case 'target.objectType':
        return e.targetTypes.includes(c.value);
      case 'target.id':
        return e.targetIds.includes(c.value);
      case 'published': {
        const t = Date.parse(c.value);
        return c.op === 'gt' ? e.published > t : c.op === 'lt' ? e.published < t : e.published === t;
      }
    }
  });
}

export interface EventsQuery {
  readonly limit: number;
  readonly startDate: number | null;
  readonly filter: LegacyClause[] | null;
  readonly rawFilter: string | null;
  readonly after: string | null;
}

export function checkEventsQuery(q: URLSearchParams): Checked<EventsQuery> {
  const bad = single(q, ['limit', 'startDate', 'filter', 'after']);
  if (bad) return { ok: false, rejection: bad };
  const breaches: string[] = [];
  const limit = parseLimit(q.get('limit'), 1000);
  if (typeof limit !== 'number') return { ok: false, rejection: limit };
  if (limit === 0) return { ok: false, rejection: invalid('limit must be between 1 and 1000') };
  if (limit !== 1000) breaches.push(`limit=${limit} (hooklog always asks for 1000)`);
  const startRaw = q.get('startDate');
  const rawFilter = q.get('filter');
  const after = q.get('after');
  if (startRaw !== null && rawFilter !== null)
    return {
      ok: false,
      rejection: invalid('startDate cannot be combined with filter; use published gt in the filter'),
    };
  if (startRaw !== null && after !== null)
    return { ok: false, rejection: invalid('startDate cannot be combined with after') };
  let startDate: number | null = null;
  if (startRaw !== null) {
    if (!LEGACY_DATE.test(startRaw) || Number.isNaN(Date.parse(startRaw)))
      return { ok: false, rejection: invalid(`startDate must be yyyy-MM-dd'T'HH:mm:ss.SSSZ, got ${startRaw}`) };
    startDate = Date.parse(startRaw);
  }
  let filter: LegacyClause[] | null = null;
  if (rawFilter !== null) {
    const parsed = parseLegacyFilter(rawFilter);
    if (!Array.isArray(parsed)) return { ok: false, rejection: parsed };
    filter = parsed;
  }
  return { ok: true, value: { limit, startDate, filter, rawFilter, after }, breaches };
}
