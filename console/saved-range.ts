/**
 * A saved search's relative range (`7d`, `24h`, `30m`: back from the moment it is opened), as
 * `hooklog search --since` takes it. Pure: the Search page (console/web) and the server read it the same way.
 */

const LAST = /^([1-9]\d{0,5})([mhd])$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const UNIT_WORDS = { m: 'minute', h: 'hour', d: 'day' } as const;
/** As every console range (console/range.ts). */
const MAX_MS = 400 * UNIT_MS.d;

/** `last` in milliseconds, or undefined when it is not a relative range of at most 400 days. */
export function lastMs(last: string): number | undefined {
  const m = LAST.exec(last);
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  return ms <= MAX_MS ? ms : undefined;
}

/** `7d` as people say it: "last 7 days" ("last 1 hour"). */
export function lastWords(last: string): string {
  const m = LAST.exec(last);
  if (!m) return last;
  const n = Number(m[1]);
  return `last ${n} ${UNIT_WORDS[m[2] as keyof typeof UNIT_WORDS]}${n === 1 ? '' : 's'}`;
}
