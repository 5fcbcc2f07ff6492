/**
 * The legacy Events API's first request, and its filter rules (protocols.md
 * §4): `startDate` cannot be combined with `filter` or with `after`, so with a
 * filter the start becomes a `published gt "<t>"` clause and-ed into it. After
 * the first request only the `next` link is followed.
 */
import { clampStart } from '../start.js';

export const LEGACY_EVENTS_PATH = '/api/v1/events';
/** The API's maximum page, and its default. */
export const LEGACY_PAGE_LIMIT = 1000;

const CLAUSE = /^(action\.objectType|target\.objectType|target\.id)\s+eq\s+"[^"\\]*"$/;

/** `yyyy-MM-dd'T'HH:mm:ss.SSSZ` in UTC, the form startDate and `published` clauses take. */
export function formatLegacyDate(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Null when `filter` is a conjunction of the documented clauses
 * (`action.objectType eq "…"`, `target.objectType eq "…"`, `target.id eq "…"`),
 * else the reason. `published` is refused: the start is expressed by hooklog,
 * and a second published bound would make a stored position disagree with it.
 * `or` is refused because and-ing the start into it would change its meaning.
 */
export function checkLegacyFilter(filter: string): string | null {
  const clauses = filter.trim().split(/\s+and\s+/i);
  for (const c of clauses) {
    if (/^published\b/i.test(c.trim()))
      return 'do not use published in the filter: hooklog adds published gt "<start>" itself';
    if (!CLAUSE.test(c.trim())) {
      return `unsupported clause ${JSON.stringify(c.trim().slice(0, 80))}: use action.objectType, target.objectType or target.id with eq "…", joined by "and"`;
    }
  }
  return null;
}

/** The filter with the start and-ed in. */
export function filterWithStart(filter: string, startMs: number): string {
  return `${filter.trim()} and published gt "${formatLegacyDate(startMs)}"`;
}

/**
 * The first URL: `startDate` when no filter is configured, otherwise the start
 * inside the filter and no startDate; never `after`. The start is clamped to
 * the 90-day retention.
 */
export function legacyFirstUrl(
  baseUrl: string,
  opts: { startMs: number; now: number; filter?: string | undefined },
): string {
  const start = clampStart(opts.startMs, opts.now);
  const q = [`limit=${LEGACY_PAGE_LIMIT}`];
  if (opts.filter) q.push(`filter=${encodeURIComponent(filterWithStart(opts.filter, start))}`);
  else q.push(`startDate=${encodeURIComponent(formatLegacyDate(start))}`);
  return `${baseUrl.replace(/\/+$/, '')}${LEGACY_EVENTS_PATH}?${q.join('&')}`;
}
