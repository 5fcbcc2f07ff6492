import { describe, expect, it } from 'vitest';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { cursorKey, cursorRecord, isFollowable, readCursor } from './cursor.js';

const asConsumed = (r: ReturnType<typeof cursorRecord>): ConsumedRecord => ({
  ...r,
  topic: 't',
  partition: 0,
  offset: 0,
  timestamp: 0,
});

describe('cursor records', () => {
  it('round-trip the next URL exactly, keyed per API and org', () => {
    const next = 'https://acme.okta.com/api/v1/logs?limit=1000&after=1700000000000_42&x=%2F';
    const rec = cursorRecord('system-log', 'acme', {
      next,
      savedAt: '2026-01-01T00:00:00.000Z',
      newestPublished: null,
      checkedAt: '2026-01-01T00:05:00.000Z',
    });
    expect(rec.key).toBe('system-log:acme');
    expect(cursorKey('legacy-events', 'acme')).toBe('legacy-events:acme');
    const map = new Map([[rec.key!, asConsumed(rec)]]);
    expect(readCursor(map, 'system-log', 'acme')).toEqual({
      next,
      savedAt: '2026-01-01T00:00:00.000Z',
      newestPublished: null,
      checkedAt: '2026-01-01T00:05:00.000Z',
    });
    expect(readCursor(map, 'legacy-events', 'acme')).toBeNull();
  });

  it('reads a record written before checked_at existed (the same version) with no last success', () => {
    const old = {
      v: 1,
      org: 'acme',
      source: 'system-log',
      next: 'https://acme.okta.com/api/v1/logs?after=1',
      saved_at: '2026-01-01T00:00:00.000Z',
      newest_published: null,
    };
    const rec: ConsumedRecord = {
      ...asConsumed(
        cursorRecord('system-log', 'acme', { ...old, savedAt: '', newestPublished: null, checkedAt: null }),
      ),
      value: Buffer.from(JSON.stringify(old)),
    };
    expect(readCursor(new Map([[rec.key!, rec]]), 'system-log', 'acme')).toEqual({
      next: old.next,
      savedAt: old.saved_at,
      newestPublished: null,
      checkedAt: null,
    });
  });

  it("reads garbage or another org's record as no cursor", () => {
    const garbage: ConsumedRecord = {
      key: 'system-log:acme',
      value: Buffer.from('{"v":2}'),
      headers: {},
      topic: 't',
      partition: 0,
      offset: 0,
      timestamp: 0,
    };
    expect(readCursor(new Map([['system-log:acme', garbage]]), 'system-log', 'acme')).toBeNull();
    const other = cursorRecord('system-log', 'other', {
      next: 'https://x/api/v1/logs',
      savedAt: '',
      newestPublished: null,
      checkedAt: null,
    });
    expect(readCursor(new Map([['system-log:acme', asConsumed(other)]]), 'system-log', 'acme')).toBeNull();
  });

  it("follows next links only on the org's own origin and API path", () => {
    expect(isFollowable('https://acme.okta.com/api/v1/logs?after=1', 'https://acme.okta.com', '/api/v1/logs')).toBe(
      true,
    );
    expect(isFollowable('https://evil.example/api/v1/logs?after=1', 'https://acme.okta.com', '/api/v1/logs')).toBe(
      false,
    );
    expect(isFollowable('http://acme.okta.com/api/v1/logs', 'https://acme.okta.com', '/api/v1/logs')).toBe(false);
    expect(isFollowable('https://acme.okta.com/api/v1/users', 'https://acme.okta.com', '/api/v1/logs')).toBe(false);
    expect(isFollowable('not a url', 'https://acme.okta.com', '/api/v1/logs')).toBe(false);
  });
});
