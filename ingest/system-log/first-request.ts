/**
 * The System Log's first polling request (protocols.md §3): `since` = the
 * start clamped to the last 90 days, `limit=1000`, ascending, and no `until`
 * (with `until` it would be a bounded query, filtered by `published`, whose
 * last page has no next link). After it, only `next` links are followed.
 */
import { clampStart } from '../start.js';

export const SYSTEM_LOG_PATH = '/api/v1/logs';
/** Always the maximum: `limit=100` (the default) falls behind on large orgs. */
export const SYSTEM_LOG_PAGE_LIMIT = 1000;

export function systemLogFirstUrl(baseUrl: string, opts: { startMs: number; now: number }): string {
  const since = new Date(clampStart(opts.startMs, opts.now)).toISOString();
  return `${baseUrl.replace(/\/+$/, '')}${SYSTEM_LOG_PATH}?since=${encodeURIComponent(since)}&limit=${SYSTEM_LOG_PAGE_LIMIT}&sortOrder=ASCENDING`;
}
