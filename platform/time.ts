/**
 * Timestamps as the feeds send them, and as ClickHouse's DateTime64(3, 'UTC')
 * columns take them. One parser for the whole process.
 */

// DateTime64's range; outside it ClickHouse would clamp silently, which is worse than refusing.
const MIN_YEAR = 1900;
const MAX_YEAR = 2299;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/**
 * Epoch milliseconds of an ISO-8601-like timestamp, or null. Accepts what the
 * feeds send: `2022-06-23T01:05:02.265Z`, `2021-06-25T21:27:03.49Z`,
 * `2022-03-22 14:21:53.225` and `2024-05-02 18:46:21.121000000` (no zone means
 * UTC), and explicit offsets. Sub-millisecond digits are truncated.
 */
export function parseTimestamp(v: unknown): number | null {
  if (typeof v !== 'string') return null;
  const m = TIMESTAMP.exec(v.trim());
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  if (year < MIN_YEAR || year > MAX_YEAR || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const local = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  if (new Date(local).getUTCDate() !== day) return null; // 2023-02-30 and the like
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone && zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    offsetMinutes = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0'));
  }
  const epoch = local - offsetMinutes * 60_000;
  const y = new Date(epoch).getUTCFullYear();
  return y < MIN_YEAR || y > MAX_YEAR ? null : epoch;
}

/** `YYYY-MM-DD hh:mm:ss.sss` in UTC: what a DateTime64(3, 'UTC') column parses in any input mode. */
export function formatDateTime64(epochMs: number): string {
  return new Date(epochMs).toISOString().replace('T', ' ').replace('Z', '');
}
