/**
 * Paging of the two APIs over the simulated org's stores: which events a
 * request returns and the `next` link that continues after them. A next link
 * is always present on a polling request, even on an empty page.
 */
import { oktaError, type Reply } from './auth.js';
import { matchesLegacy, type EventsQuery, type LogsQuery } from './rules.js';
import { scanForward, type EventLog, type StoredEvent } from './store.js';

export interface PageResult {
  readonly items: readonly StoredEvent[];
  /** Absolute next URL, or null (only the last page of a bounded query). */
  readonly next: string | null;
}

export interface PagingContext {
  readonly origin: string;
  readonly now: number;
  readonly retentionMs: number;
  /** `after` tokens this org has handed out; anything else is a fabricated cursor. */
  readonly issued: Set<string>;
}

const DAY = 86_400_000;
const bad = (summary: string, violation: string): Reply => ({
  ...oktaError(400, 'E0000001', `Api validation failed: ${summary}`),
  violation,
});

function logsToken(e: StoredEvent | undefined): string {
  return e ? `${e.persistedAt}_${e.seq}` : '0_0';
}

/** GET /api/v1/logs: a polling request (no until) pages by persistence; a bounded one by published. */
export function logsPage(log: EventLog, q: LogsQuery, ctx: PagingContext): PageResult | Reply {
  if (q.until !== null) return boundedLogsPage(log, q, ctx);
  let start: number;
  if (q.after !== null) {
    const m = /^\d+_(\d+)$/.exec(q.after);
    if (!m || !ctx.issued.has(q.after))
      return bad('after is not a cursor this org issued', `fabricated after=${q.after}`);
    start = log.indexAfterSeq(Number(m[1]));
  } else {
    start = log.indexPersistedFrom(q.since ?? ctx.now - 7 * DAY);
  }
  const keep = typeFilter(q.filter);
  const scan = scanForward(log, start, q.limit, ctx.now, ctx.retentionMs, keep);
  const token = logsToken(log.at(scan.end - 1));
  ctx.issued.add(token);
  const params = new URLSearchParams({ limit: String(q.limit), after: token });
  if (q.filter) params.set('filter', q.filter);
  return { items: scan.items, next: `${ctx.origin}/api/v1/logs?${params.toString()}` };
}

/** `eventType eq "a" or eventType eq "b"`: the one filter shape the simulated org understands. */
function typeFilter(filter: string | null): (e: StoredEvent) => boolean {
  if (!filter) return () => true;
  const types = [...filter.matchAll(/eventType eq "([^"]*)"/g)].map((m) => `"eventType":${JSON.stringify(m[1])}`);
  return (e) => types.some((t) => e.json.includes(t));
}

function boundedLogsPage(log: EventLog, q: LogsQuery, ctx: PagingContext): PageResult | Reply {
  const since = q.since ?? q.until! - 7 * DAY;
  const keep = typeFilter(q.filter);
  const offset = q.after === null ? 0 : Number(/^b(\d+)$/.exec(q.after)?.[1] ?? NaN);
  if (!Number.isInteger(offset) || (q.after !== null && !ctx.issued.has(q.after)))
    return bad('after is not a cursor this org issued', `fabricated after=${q.after}`);
  const all = log
    .all()
    .slice(0, log.visibleCount(ctx.now))
    .filter(
      (e) => e.published >= since && e.published < q.until! && e.published >= ctx.now - ctx.retentionMs && keep(e),
    )
    .sort((a, b) => a.published - b.published || a.seq - b.seq);
  const items = all.slice(offset, offset + q.limit);
  if (offset + q.limit >= all.length) return { items, next: null };
  const token = `b${offset + q.limit}`;
  ctx.issued.add(token);
  const params = new URLSearchParams({
    since: new Date(since).toISOString(),
    until: new Date(q.until!).toISOString(),
    limit: String(q.limit),
    after: token,
  });
  if (q.filter) params.set('filter', q.filter);
  return { items, next: `${ctx.origin}/api/v1/logs?${params.toString()}` };
}

/**
 * GET /api/v1/events: from `after` (an event id this org handed out), from
 * `startDate`, or from the start of the filter's scan; with none of them,
 * one hour ago. The filter rides along in every next link.
 */
export function eventsPage(log: EventLog, q: EventsQuery, selfUrl: string, ctx: PagingContext): PageResult | Reply {
  let start: number;
  if (q.after !== null) {
    const idx = log.indexOfId(q.after);
    if (idx === undefined || !ctx.issued.has(q.after))
      return bad('after is not a cursor this org issued', `fabricated after=${q.after}`);
    start = idx + 1;
  } else if (q.startDate !== null) {
    start = log.indexPersistedFrom(q.startDate);
  } else if (q.filter !== null) {
    start = 0;
  } else {
    start = log.indexPersistedFrom(ctx.now - 3_600_000);
  }
  const scan = scanForward(log, start, q.limit, ctx.now, ctx.retentionMs, (e) =>
    q.filter ? matchesLegacy(e, q.filter) : true,
  );
  const last = log.at(scan.end - 1);
  if (!last) return { items: scan.items, next: selfUrl };
  ctx.issued.add(last.id);
  const params = new URLSearchParams({ limit: String(q.limit) });
  if (q.rawFilter !== null) params.set('filter', q.rawFilter);
  params.set('after', last.id);
  return { items: scan.items, next: `${ctx.origin}/api/v1/events?${params.toString()}` };
}
