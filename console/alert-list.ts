/**
 * The alert list's query as a URL carries it, read the same way by the list
 * (GET /console/api/alerts) and by a change by filter (changes.ts), so "select
 * all N matching" changes exactly the N alerts the list counted.
 *
 * Pages are keyset pages of a snapshot: the page token (`page`, opaque to the
 * page, base64url JSON) holds the snapshot's time, the sort, the position of
 * the row the page starts after (or ends before) and the page's offset. Alerts
 * that arrive later are outside the snapshot: they shift no page and change no
 * total; the list counts them as `newer`, shown when a new snapshot is taken.
 */
import { z } from 'zod';
import type { Principal } from '../platform/access.js';
import { formatDateTime64, parseTimestamp } from '../platform/time.js';
import { isStatus, MAX_TEXT_FILTER, SORTS, type AlertFilter, type AlertSort, type SortKey } from './alerts.js';
import { ParamError, parseRange } from './range.js';
import type { Scope } from './scope.js';

/** The assignee filter's value for "assigned to me": the signed-in principal's name. */
export const MINE = 'mine';
/** The most rows a page holds. */
export const MAX_PAGE = 500;
export const DEFAULT_PAGE = 50;
/** How far ahead of this instance's clock a snapshot may be (made by another instance of a fleet). */
const CLOCK_SKEW_MS = 60_000;
/** A token longer than this is not one of ours (a key is a number and an id of at most 128 characters). */
const MAX_TOKEN_CHARS = 600;

const tokenSchema = z.strictObject({
  v: z.literal(1),
  /** The snapshot: epoch ms. */
  a: z.number().int().nonnegative(),
  s: z.enum(SORTS),
  /** Descending. */
  d: z.boolean(),
  /** The page's offset in the snapshot (for "51–100 of N"). */
  o: z.number().int().nonnegative(),
  /** The position: the page starts after it, or with `b`, ends before it. */
  k: z.tuple([z.number(), z.string().max(128)]).optional(),
  b: z.boolean().optional(),
});
export type PageToken = z.output<typeof tokenSchema>;

export function encodePage(t: PageToken): string {
  return Buffer.from(JSON.stringify(t), 'utf8').toString('base64url');
}

export function decodePage(s: string): PageToken {
  const bad = () => new ParamError('page', 'is not a page of this list (start again from the first page)');
  if (s.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(s)) throw bad();
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const parsed = tokenSchema.safeParse(v);
  if (!parsed.success) throw bad();
  return parsed.data;
}

export interface ListQuery {
  /** The filter in its snapshot, with its sort and position. */
  readonly filter: AlertFilter & { readonly asOf: number; readonly sort: AlertSort };
  /** The page's offset in the snapshot. */
  readonly offset: number;
  /** The end of the range for counting alerts newer than the snapshot. */
  readonly liveUntil: string;
  readonly snapshotUntilMs: number;
}

/**
 * The list's parameters: filters (rule, severity, status, assignee with
 * `mine`, `q` text over rule and key, since/until), sort (`sort` time,
 * severity, count or status; `dir` desc or asc), page size (`limit`) and the
 * snapshot (`page`, or `as_of` for a change by filter). `scope` is the orgs
 * already checked for the principal.
 */
export function parseListQuery(
  q: Readonly<Record<string, string | undefined>>,
  who: Principal,
  scope: Scope,
  now: number,
): ListQuery {
  if (q.status && !isStatus(q.status)) throw new ParamError('status', 'must be open, acknowledged or closed');
  const by = q.sort || 'time';
  if (!SORTS.includes(by as (typeof SORTS)[number])) throw new ParamError('sort', `must be one of ${SORTS.join(', ')}`);
  const dir = q.dir || 'desc';
  if (dir !== 'desc' && dir !== 'asc') throw new ParamError('dir', 'must be desc or asc');
  const sort: AlertSort = { by: by as AlertSort['by'], desc: dir === 'desc' };
  const n = q.limit === undefined ? DEFAULT_PAGE : Number(q.limit);
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE)
    throw new ParamError('limit', `must be a whole number from 1 to ${MAX_PAGE}`);
  const text = q.q?.trim() ?? '';
  if (text.length > MAX_TEXT_FILTER) throw new ParamError('q', `may be at most ${MAX_TEXT_FILTER} characters`);

  const token = q.page ? decodePage(q.page) : undefined;
  if (token && (token.s !== sort.by || token.d !== sort.desc))
    throw new ParamError('page', 'belongs to another sort (start again from the first page)');
  let asOf = token?.a ?? now;
  if (!token && q.as_of) {
    const at = parseTimestamp(q.as_of);
    if (at === null) throw new ParamError('as_of', 'must be an ISO-8601 timestamp');
    asOf = at;
  }
  // Another instance of a fleet made the token: its clock may be a little ahead of this one's.
  if (asOf > now + CLOCK_SKEW_MS) throw new ParamError(token ? 'page' : 'as_of', 'is in the future');
  // The default range ends at the snapshot (inclusive), so the snapshot's newest alert is in it.
  const range = parseRange(q, asOf + 1, 30);
  const liveUntil = q.until ? range.until : formatDateTime64(Math.max(now, asOf) + 1);
  return {
    filter: {
      scope,
      since: range.since,
      until: range.until,
      limit: n,
      asOf,
      sort,
      ...(q.rule ? { rule: q.rule } : {}),
      ...(q.severity ? { severity: q.severity } : {}),
      ...(isStatus(q.status) ? { status: q.status } : {}),
      ...(q.assignee !== undefined ? { assignee: q.assignee === MINE ? who.name : q.assignee } : {}),
      ...(text ? { text } : {}),
      ...(token?.k ? (token.b ? { before: token.k as SortKey } : { after: token.k as SortKey }) : {}),
    },
    offset: token?.o ?? 0,
    liveUntil,
    snapshotUntilMs: range.untilMs,
  };
}
