/**
 * Where a poller begins when it has no stored position: the configured start
 * (a timestamp or a duration back from now), clamped to the service's 90-day
 * retention. The clamp also keeps every first request far from the System
 * Log's hard limit (a `since` over 180 days back is refused with E0000053).
 */

/** Events older than this are not returned by either API. */
export const RETENTION_MS = 90 * 86_400_000;
/** The System Log refuses a `since` older than this (400 E0000053). */
export const MAX_SINCE_MS = 180 * 86_400_000;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d{1,9})(ms|s|m|h|d)$/;
// With a zone: a timestamp without one would mean different instants on different hosts.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

/** Epoch ms of a configured start (`90d`, `12h`, `2026-01-01T00:00:00Z`), or null when it is neither form. */
export function parseStart(value: string, now: number): number | null {
  const v = value.trim();
  const d = DURATION.exec(v);
  if (d) return now - Number(d[1]) * UNIT_MS[d[2]!]!;
  if (!TIMESTAMP.test(v)) return null;
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? null : ms;
}

/** The start actually requested: not before now − 90 days (retention), not after now. */
export function clampStart(startMs: number, now: number): number {
  return Math.min(now, Math.max(startMs, now - RETENTION_MS));
}
