/**
 * `hooklog backfill`: re-reads one window [since, until) of an org's System
 * Log (a bounded query) or legacy Events (a `published gt/lt` filter) into
 * the same topics the pollers write, with `hooklog-source: backfill`.
 *
 * - Exactly once in ClickHouse: every event of the window is appended; those
 *   already stored fold by (org, uuid) like any duplicate.
 * - Survives `kill -9`: its own position (key `backfill:<source>:<org>:<since>:<until>`
 *   on the cursors topic) is appended atomically with each page, so a rerun
 *   of the same command resumes after the last stored page, and a finished
 *   window is not read again.
 * - Shares the org's rate budget with the live poller: the same budget ledger
 *   (`<data_dir>/rate-budget`), and the budget counts whatever the bucket lost,
 *   whoever spent it.
 */
import { HooklogError, isRetriable } from '../../platform/errors.js';
import { retry } from '../../platform/retry.js';
import { Header, deadLetter, type Topics } from '../../platform/stream/headers.js';
import { MAX_RECORD_BYTES, recordBytes, storableLetter } from '../../platform/stream/record-size.js';
import type { ConsumedRecord, Stream, StreamRecord } from '../../platform/stream/types.js';
import { describeIssues, logEventFields } from '../../schemas/logevent.js';
import type { IdentityClient, Page } from '../../platform/identity/client.js';
import type { IdpPolicies } from '../../platform/identity/policies.js';
import type { RateBudget } from '../../platform/identity/rate-limit.js';
import { isFollowable } from '../poller/cursor.js';
import { LEGACY_EVENTS_PATH, LEGACY_PAGE_LIMIT, formatLegacyDate } from '../legacy-events/first-request.js';
import { SYSTEM_LOG_PATH } from '../system-log/first-request.js';
import { RETENTION_MS } from '../start.js';
import { windowUrl } from '../reconcile/windows.js';

export type BackfillSource = 'logs' | 'events';

export interface BackfillProgress {
  readonly sinceMs: number;
  readonly untilMs: number;
  /** Newest published time read so far (pages come in published order), or null before the first event. */
  readonly coveredToMs: number | null;
  readonly events: number;
  readonly requests: number;
  readonly done: boolean;
  /** This run's start, and the position it resumed with (what earlier runs had done). */
  readonly startedMs: number;
  readonly resumedFrom: { readonly coveredToMs: number | null; readonly events: number } | null;
}

export interface BackfillOptions {
  readonly org: string;
  readonly baseUrl: string;
  readonly source: BackfillSource;
  readonly sinceMs: number;
  readonly untilMs: number;
  readonly client: IdentityClient;
  readonly budget: RateBudget;
  readonly stream: Stream;
  readonly topics: Pick<Topics, 'logs' | 'legacyEvents' | 'cursors' | 'deadletter'>;
  readonly policies: IdpPolicies;
  /** Requests made so far by the client (its reply counter). */
  readonly requests: () => number;
  readonly onProgress?: (p: BackfillProgress) => void;
  readonly signal?: AbortSignal;
  readonly now?: () => number;
}

/** Refuses a window the service cannot serve or that makes no sense, naming the flag. */
export function checkWindow(sinceMs: number, untilMs: number, now: number): void {
  if (Number.isNaN(sinceMs)) throw new HooklogError('CONFIG_INVALID', '--since: not an ISO-8601 time');
  if (Number.isNaN(untilMs)) throw new HooklogError('CONFIG_INVALID', '--until: not an ISO-8601 time');
  if (sinceMs < now - RETENTION_MS)
    throw new HooklogError(
      'CONFIG_INVALID',
      `--since: ${new Date(sinceMs).toISOString()} is more than 90 days back (the service keeps 90 days)`,
    );
  if (untilMs > now) throw new HooklogError('CONFIG_INVALID', '--until: in the future');
  if (untilMs <= sinceMs) throw new HooklogError('CONFIG_INVALID', '--until must be after --since');
}

export function backfillKey(source: BackfillSource, org: string, sinceMs: number, untilMs: number): string {
  return `backfill:${source}:${org}:${new Date(sinceMs).toISOString()}:${new Date(untilMs).toISOString()}`;
}

interface Position {
  readonly next: string | null;
  readonly done: boolean;
  readonly events: number;
  readonly coveredToMs: number | null;
}

export function readBackfillPosition(latest: ReadonlyMap<string, ConsumedRecord>, key: string): Position | null {
  const rec = latest.get(key);
  if (!rec) return null;
  try {
    const v = JSON.parse(rec.value.toString('utf8')) as {
      v?: unknown;
      next?: unknown;
      done?: unknown;
      events?: unknown;
      covered_to?: unknown;
    };
    if (v.v !== 1 || typeof v.done !== 'boolean' || typeof v.events !== 'number') return null;
    const covered = typeof v.covered_to === 'string' ? Date.parse(v.covered_to) : NaN;
    return {
      next: typeof v.next === 'string' ? v.next : null,
      done: v.done,
      events: v.events,
      coveredToMs: Number.isNaN(covered) ? null : covered,
    };
  } catch {
    return null;
  }
}

function firstUrl(o: BackfillOptions): string {
  if (o.source === 'logs') return windowUrl(o.baseUrl, o.sinceMs, o.untilMs, null);
  const filter = `published gt "${formatLegacyDate(o.sinceMs - 1)}" and published lt "${formatLegacyDate(o.untilMs)}"`;
  return `${o.baseUrl.replace(/\/+$/, '')}${LEGACY_EVENTS_PATH}?limit=${LEGACY_PAGE_LIMIT}&filter=${encodeURIComponent(filter)}`;
}

/** Runs (or resumes) the backfill to the end of its window; resolves with the final progress. */
export async function runBackfill(
  o: BackfillOptions,
  latest: ReadonlyMap<string, ConsumedRecord>,
): Promise<BackfillProgress> {
  const now = o.now ?? Date.now;
  const key = backfillKey(o.source, o.org, o.sinceMs, o.untilMs);
  const stored = readBackfillPosition(latest, key);
  const startedMs = now();
  const path = o.source === 'logs' ? SYSTEM_LOG_PATH : LEGACY_EVENTS_PATH;
  const topic = o.source === 'logs' ? o.topics.logs : o.topics.legacyEvents;
  let pos: Position = stored ?? { next: firstUrl(o), done: false, events: 0, coveredToMs: null };
  const progress = (): BackfillProgress => ({
    sinceMs: o.sinceMs,
    untilMs: o.untilMs,
    coveredToMs: pos.coveredToMs,
    events: pos.events,
    requests: o.requests(),
    done: pos.done,
    startedMs,
    resumedFrom: stored ? { coveredToMs: stored.coveredToMs, events: stored.events } : null,
  });
  o.onProgress?.(progress());
  while (!pos.done && pos.next !== null) {
    if (o.signal?.aborted) throw o.signal.reason instanceof Error ? o.signal.reason : new Error('aborted');
    const page = await o.client.getPage(pos.next, {
      budget: o.budget,
      signal: o.signal,
      feature: o.source === 'events',
    });
    let next: string | null = page.next;
    if (next !== null && !isFollowable(next, o.baseUrl, path)) {
      throw new HooklogError(
        'IDP_REQUEST_REJECTED',
        `org ${o.org}: the next link leaves ${new URL(o.baseUrl).origin}${path}; not following it`,
      );
    }
    // The legacy API always gives a next link: a short page is the end of the filtered window.
    const done = next === null || (o.source === 'events' && page.items.length < LEGACY_PAGE_LIMIT);
    if (done) next = null;
    pos = await store(o, key, topic, page, { next, done, events: pos.events, coveredToMs: pos.coveredToMs }, now);
    o.onProgress?.(progress());
  }
  return progress();
}

/** The page's events and the new position, in one atomic append. */
async function store(
  o: BackfillOptions,
  key: string,
  topic: string,
  page: Page,
  p: Position,
  now: () => number,
): Promise<Position> {
  const receivedAt = new Date(now()).toISOString();
  const headers = { [Header.org]: o.org, [Header.source]: 'backfill', [Header.receivedAt]: receivedAt };
  const events: StreamRecord[] = [];
  const rejected: StreamRecord[] = [];
  let covered = p.coveredToMs;
  page.items.forEach((item, i) => {
    const value = page.raw[i]!;
    const publishedMs = checkItem(o.source, item);
    const event: StreamRecord = { key: o.org, value, headers };
    // An event no stream batch can hold would fail the page on every retry: dead-lettered (cut short) instead.
    if (typeof publishedMs === 'number' && recordBytes(event) <= MAX_RECORD_BYTES) {
      events.push(event);
      covered = covered === null ? publishedMs : Math.max(covered, publishedMs);
    } else {
      const why =
        typeof publishedMs === 'number'
          ? `an event of ${value.length} bytes, over the largest stream record (${MAX_RECORD_BYTES} bytes)`
          : publishedMs.reason;
      rejected.push(storableLetter(deadLetter(value, `backfill item ${i}: ${why}`, 'backfill', headers, o.org)));
    }
  });
  const position: Position = { ...p, events: p.events + events.length, coveredToMs: p.done ? o.untilMs : covered };
  const value = {
    v: 1,
    org: o.org,
    source: o.source,
    since: new Date(o.sinceMs).toISOString(),
    until: new Date(o.untilMs).toISOString(),
    next: position.next,
    done: position.done,
    events: position.events,
    covered_to: position.coveredToMs === null ? null : new Date(position.coveredToMs).toISOString(),
    saved_at: receivedAt,
  };
  const cursor: StreamRecord = {
    key,
    value: Buffer.from(JSON.stringify(value)),
    headers: { [Header.org]: o.org, [Header.source]: 'backfill', [Header.receivedAt]: receivedAt },
  };
  await retry(
    () =>
      o.stream.appendAtomically([
        { topic, records: events },
        { topic: o.topics.deadletter, records: rejected },
        { topic: o.topics.cursors, records: [cursor] },
      ]),
    {
      policy: o.policies.append,
      retriable: isRetriable,
      ...(o.signal ? { signal: o.signal } : {}),
    },
  );
  return position;
}

function checkItem(source: BackfillSource, item: unknown): number | { reason: string } {
  if (source === 'logs') {
    const r = logEventFields.safeParse(item);
    return r.success ? Date.parse(r.data.published) : { reason: describeIssues(r.error) };
  }
  const published = (item as { published?: unknown } | null)?.published;
  const ms = typeof published === 'string' ? Date.parse(published) : NaN;
  const id = (item as { eventId?: unknown } | null)?.eventId;
  return typeof id === 'string' && !Number.isNaN(ms) ? ms : { reason: 'not a legacy event (eventId and published)' };
}
