/**
 * The identity sync's position, on the compacted `<prefix>.cursors` topic beside the pollers' cursors (key
 * `identity:<org>`, so it is owned with them: the partition the key lands on), appended in the same atomic append as
 * the records it covers.
 *
 * - `high_water`: an incremental pass lists users whose `lastUpdated` is after it. It never moves past the start of
 *   the pass that read it less `LISTING_MARGIN_MS` (a user listed early in a pass and changed before the pass ends is
 *   read again by the next), and never back.
 * - `full_at`: when the last full pass started. The next full pass is due `full_interval_ms` after it.
 */
import { z } from 'zod';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord, StreamRecord } from '../../platform/stream/types.js';

export interface IdentityPosition {
  /** Epoch ms; null before the first full pass completed. */
  readonly highWater: number | null;
  /** Epoch ms the last completed full pass started; null before the first. */
  readonly fullAt: number | null;
}

const value = z.object({
  v: z.literal(1),
  org: z.string(),
  source: z.literal('identity'),
  high_water: z.string().nullable(),
  full_at: z.string().nullable(),
  saved_at: z.string(),
});

export function identityCursorKey(org: string): string {
  return `identity:${org}`;
}

export function positionRecord(org: string, p: IdentityPosition, savedAt: number): StreamRecord {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  const saved = new Date(savedAt).toISOString();
  return {
    key: identityCursorKey(org),
    value: Buffer.from(
      JSON.stringify({
        v: 1,
        org,
        source: 'identity',
        high_water: iso(p.highWater),
        full_at: iso(p.fullAt),
        saved_at: saved,
      }),
    ),
    headers: { [Header.org]: org, [Header.receivedAt]: saved },
  };
}

/** The stored position of `org`, or null when there is none or it is unreadable (the sync starts with a full pass). */
export function readIdentityPosition(
  latest: ReadonlyMap<string, ConsumedRecord>,
  org: string,
): IdentityPosition | null {
  const rec = latest.get(identityCursorKey(org));
  if (!rec) return null;
  try {
    const v = value.parse(JSON.parse(rec.value.toString('utf8')));
    if (v.org !== org) return null;
    const ms = (s: string | null) => (s === null ? null : Number.isNaN(Date.parse(s)) ? null : Date.parse(s));
    return { highWater: ms(v.high_water), fullAt: ms(v.full_at) };
  } catch {
    return null;
  }
}
