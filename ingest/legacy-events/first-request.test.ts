import { describe, expect, it } from 'vitest';
import { checkLegacyFilter, filterWithStart, formatLegacyDate, legacyFirstUrl } from './first-request.js';

const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const DAY = 86_400_000;
const params = (u: string) => Object.fromEntries(new URL(u).searchParams);

describe('the legacy Events first request', () => {
  it('without a filter: startDate in yyyy-MM-ddTHH:mm:ss.SSSZ, limit 1000, no filter, no after', () => {
    const u = legacyFirstUrl('https://acme.okta.com', { startMs: NOW - 2 * DAY, now: NOW });
    expect(new URL(u).pathname).toBe('/api/v1/events');
    expect(params(u)).toEqual({ limit: '1000', startDate: '2026-05-30T12:00:00.000Z' });
    expect(u).toContain('startDate=2026-05-30T12%3A00%3A00.000Z');
  });

  it('with a filter: no startDate; the start becomes published gt "<t>" and-ed into the filter', () => {
    const filter = 'action.objectType eq "core.user_auth.login_success" and target.objectType eq "User"';
    const u = legacyFirstUrl('https://acme.okta.com', { startMs: NOW - 2 * DAY, now: NOW, filter });
    expect(params(u)).toEqual({ limit: '1000', filter: `${filter} and published gt "2026-05-30T12:00:00.000Z"` });
    expect(u).not.toContain('startDate');
    expect(u).not.toContain('+'); // spaces as %20, not form-encoding
  });

  it('clamps the start to the 90-day retention, in both forms', () => {
    const clamped = formatLegacyDate(NOW - 90 * DAY);
    expect(params(legacyFirstUrl('https://a', { startMs: NOW - 200 * DAY, now: NOW })).startDate).toBe(clamped);
    expect(
      params(legacyFirstUrl('https://a', { startMs: NOW - 200 * DAY, now: NOW, filter: 'target.id eq "x"' })).filter,
    ).toBe(`target.id eq "x" and published gt "${clamped}"`);
    expect(params(legacyFirstUrl('https://a', { startMs: NOW - 89 * DAY, now: NOW })).startDate).toBe(
      formatLegacyDate(NOW - 89 * DAY),
    );
  });

  it('accepts only conjunctions of the documented clauses, and never published', () => {
    expect(checkLegacyFilter('action.objectType eq "a"')).toBeNull();
    expect(checkLegacyFilter('target.id eq "00u1" AND target.objectType eq "User"')).toBeNull();
    expect(checkLegacyFilter('published gt "2026-01-01T00:00:00.000Z"')).toMatch(/published/);
    expect(checkLegacyFilter('action.objectType eq "a" or target.id eq "b"')).toMatch(/unsupported clause/);
    expect(checkLegacyFilter('actor.id eq "a"')).toMatch(/unsupported clause/);
    expect(checkLegacyFilter('target.id co "a"')).toMatch(/unsupported clause/);
    expect(filterWithStart('  target.id eq "x" ', 0)).toBe(
      'target.id eq "x" and published gt "1970-01-01T00:00:00.000Z"',
    );
  });
});
