import { describe, expect, it } from 'vitest';
import { clampStart, MAX_SINCE_MS, parseStart, RETENTION_MS } from './start.js';
import { systemLogFirstUrl } from './system-log/first-request.js';

const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const DAY = 86_400_000;

describe('parseStart', () => {
  it('takes a duration back from now or a timestamp with a zone', () => {
    expect(parseStart('7d', NOW)).toBe(NOW - 7 * DAY);
    expect(parseStart('12h', NOW)).toBe(NOW - 12 * 3_600_000);
    expect(parseStart('30m', NOW)).toBe(NOW - 1_800_000);
    expect(parseStart('45s', NOW)).toBe(NOW - 45_000);
    expect(parseStart('2026-05-01T00:00:00Z', NOW)).toBe(Date.parse('2026-05-01T00:00:00Z'));
    expect(parseStart('2026-05-01T02:00:00.5+02:00', NOW)).toBe(Date.parse('2026-05-01T00:00:00.500Z'));
  });
  it('refuses what is neither (a zoneless timestamp means different instants on different hosts)', () => {
    for (const bad of ['2026-05-01T00:00:00', '7 days', '-7d', '7w', '', 'yesterday'])
      expect(parseStart(bad, NOW)).toBeNull();
  });
});

describe('the System Log first request', () => {
  it('clamps the start to now − 90 days, so since is never near the 180-day refusal', () => {
    expect(clampStart(NOW - 100 * DAY, NOW)).toBe(NOW - RETENTION_MS);
    expect(clampStart(NOW - 400 * DAY, NOW)).toBeGreaterThan(NOW - MAX_SINCE_MS);
    expect(clampStart(NOW - DAY, NOW)).toBe(NOW - DAY);
    expect(clampStart(NOW + DAY, NOW)).toBe(NOW);
  });
  it('asks for since, limit=1000, ascending, and no until', () => {
    const url = new URL(systemLogFirstUrl('https://acme.okta.com/', { startMs: NOW - 365 * DAY, now: NOW }));
    expect(url.origin + url.pathname).toBe('https://acme.okta.com/api/v1/logs');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      since: '2026-03-03T12:00:00.000Z',
      limit: '1000',
      sortOrder: 'ASCENDING',
    });
  });
});
