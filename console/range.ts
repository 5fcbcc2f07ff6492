/**
 * The time range of a console read, from the URL's `since` and `until`
 * (ISO-8601; default: the `defaultDays` before now), bound as DateTime64 text.
 */
import { formatDateTime64, parseTimestamp } from '../platform/time.js';

export interface TimeRange {
  /** ClickHouse DateTime64(3) text, for binding. */
  readonly since: string;
  readonly until: string;
  readonly sinceMs: number;
  readonly untilMs: number;
}

export class ParamError extends Error {
  readonly param: string;
  constructor(param: string, message: string) {
    super(`parameter "${param}": ${message}`);
    this.param = param;
  }
}

const DAY = 86_400_000;

export function parseRange(
  q: Readonly<Record<string, string | undefined>>,
  now: number,
  defaultDays: number,
): TimeRange {
  const at = (name: 'since' | 'until', fallback: number): number => {
    const text = q[name];
    if (text === undefined || text === '') return fallback;
    const ms = parseTimestamp(text);
    if (ms === null) throw new ParamError(name, 'must be an ISO-8601 timestamp such as 2026-01-05T00:00:00Z');
    return ms;
  };
  const untilMs = at('until', now);
  const sinceMs = at('since', untilMs - defaultDays * DAY);
  if (sinceMs >= untilMs) throw new ParamError('until', 'must be after since');
  if (untilMs - sinceMs > 400 * DAY) throw new ParamError('since', 'the range may span at most 400 days');
  return { since: formatDateTime64(sinceMs), until: formatDateTime64(untilMs), sinceMs, untilMs };
}

/** A bucket for time series over the range: about a hundred points at most, in whole minutes. */
export function bucketMinutes(r: TimeRange): number {
  const minutes = (r.untilMs - r.sinceMs) / 60_000;
  for (const m of [5, 15, 60, 180, 360, 720, 1440]) if (minutes / m <= 120) return m;
  return 10_080;
}
