/**
 * A poller's position: the `next` URL the service gave, stored on the
 * compacted `<prefix>.cursors` topic in the same atomic append as the events
 * it covers. It is never rebuilt from `published` (events arrive in
 * persistence order, not published order: resuming from the last published
 * time skips or repeats events).
 */
import { z } from 'zod';
import { Header, type EventSource } from '../../platform/stream/headers.js';
import type { ConsumedRecord, StreamRecord } from '../../platform/stream/types.js';

export type PollSourceName = Extract<EventSource, 'system-log' | 'legacy-events'>;

export interface Cursor {
  /** The next link, exactly as the service gave it. */
  readonly next: string;
  /** When the position last moved (ISO): a record that only confirms it keeps the time it moved. */
  readonly savedAt: string;
  /**
   * When the poller last had a successful reply, as of this record (ISO): the page it stores, or for a caught-up
   * poller a confirmation of an unmoved position (at most every success_record_interval_ms). Null in records
   * written before it existed.
   */
  readonly checkedAt: string | null;
  /** Newest `published` among the events stored so far (ISO), for the lag after a restart. */
  readonly newestPublished: string | null;
}

const cursorValue = z.object({
  v: z.literal(1),
  org: z.string(),
  source: z.string(),
  next: z.url(),
  saved_at: z.string(),
  newest_published: z.string().nullable(),
  // Added to version 1 (absent from older records): an old reader ignores it, so no version change.
  checked_at: z.string().optional(),
});

/** One key per org and API: both pollers of an org share the topic, never a key. */
export function cursorKey(source: PollSourceName, org: string): string {
  return `${source}:${org}`;
}

export function cursorRecord(source: PollSourceName, org: string, cursor: Cursor): StreamRecord {
  const value = {
    v: 1,
    org,
    source,
    next: cursor.next,
    saved_at: cursor.savedAt,
    newest_published: cursor.newestPublished,
    ...(cursor.checkedAt === null ? {} : { checked_at: cursor.checkedAt }),
  };
  return {
    key: cursorKey(source, org),
    value: Buffer.from(JSON.stringify(value)),
    headers: { [Header.org]: org, [Header.source]: source, [Header.receivedAt]: cursor.savedAt },
  };
}

/**
 * The stored cursor of (source, org), or null when there is none or it is unreadable (then the poller starts afresh,
 * and says so).
 */
export function readCursor(
  latest: ReadonlyMap<string, ConsumedRecord>,
  source: PollSourceName,
  org: string,
): Cursor | null {
  const rec = latest.get(cursorKey(source, org));
  if (!rec) return null;
  try {
    const v = cursorValue.parse(JSON.parse(rec.value.toString('utf8')));
    if (v.org !== org || v.source !== source) return null;
    return {
      next: v.next,
      savedAt: v.saved_at,
      newestPublished: v.newest_published,
      checkedAt: v.checked_at ?? null,
    };
  } catch {
    return null;
  }
}

/**
 * True when `next` may be followed with this org's credentials: same origin
 * and API path as the org's base URL. A link elsewhere would hand our token
 * to another host.
 */
export function isFollowable(next: string, baseUrl: string, path: string): boolean {
  try {
    const n = new URL(next);
    return n.origin === new URL(baseUrl).origin && n.pathname === path;
  } catch {
    return false;
  }
}
