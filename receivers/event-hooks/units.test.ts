import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { nestingExceeds } from '../body.js';
import { SecretMatcher, normaliseCredential } from '../../platform/secret-matcher.js';
import { expectedSourceOf } from './config.js';
import { RecentDeliveries, deliveryKey } from './dedupe.js';
import { InFlightLimit } from './in-flight.js';

describe('SecretMatcher', () => {
  it('accepts each configured secret (rotation) and nothing else', () => {
    const m = new SecretMatcher(['first-secret-0123456', 'second-secret-012345']);
    expect(m.matches('first-secret-0123456')).toBe(true);
    expect(m.matches('second-secret-012345')).toBe(true);
    expect(m.matches('first-secret-012345')).toBe(false);
    expect(m.matches('first-secret-01234567')).toBe(false);
    expect(m.matches('')).toBe(false);
    expect(m.matches(undefined)).toBe(false);
    // Which one matched: what a rotation watches (the second stops being used).
    expect(m.matchIndex('first-secret-0123456')).toBe(0);
    expect(m.matchIndex('second-secret-012345')).toBe(1);
    expect(m.matchIndex('first-secret-012345')).toBe(-1);
    expect(m.matchIndex(undefined)).toBe(-1);
    expect(new SecretMatcher(['same-secret-01234567', 'same-secret-01234567']).matchIndex('same-secret-01234567')).toBe(
      0,
    );
  });

  it('takes a Basic auth value as a header value, with the scheme matched case-insensitively and the credentials exactly', () => {
    const value = `Basic ${Buffer.from('okta:s3cret-pass').toString('base64')}`;
    const m = new SecretMatcher([value]);
    expect(m.matches(value)).toBe(true);
    expect(m.matches(value.replace('Basic', 'basic'))).toBe(true);
    expect(m.matches(value.replace('Basic ', 'BASIC  '))).toBe(true);
    expect(m.matches(`Basic ${Buffer.from('okta:s3cret-pasS').toString('base64')}`)).toBe(false);
    expect(m.matches(`Bearer ${Buffer.from('okta:s3cret-pass').toString('base64')}`)).toBe(false);
    expect(normaliseCredential('token-with-Basic-inside')).toBe('token-with-Basic-inside');
  });

  it('compares whole values: no prefix, padding byte, truncation past the compared width or other secret matches', () => {
    const long = 'L'.repeat(700) + '-secret'; // longer than the smallest width: the width grows with it
    const m = new SecretMatcher(['short-secret-0123456', long, 'ünïcödé-secret-01234']);
    expect(m.matches('short-secret-0123456')).toBe(true);
    expect(m.matches(long)).toBe(true);
    expect(m.matches('ünïcödé-secret-01234')).toBe(true);
    expect(m.matches('short-secret-012345')).toBe(false);
    expect(m.matches('short-secret-0123456\u0000')).toBe(false);
    expect(m.matches(`${long}x`)).toBe(false);
    expect(m.matches(long.slice(0, -1))).toBe(false);
    expect(m.matches('x'.repeat(5000))).toBe(false);
    expect(m.matches(`short-secret-0123456${' '.repeat(3000)}`)).toBe(false);
    expect(m.matches('unicode-secret-01234')).toBe(false);
    // A value filling the buffer, then a shorter one: the reused buffer keeps nothing of the first.
    expect(m.matches(`short-secret-0123456${'z'.repeat(2000)}`)).toBe(false);
    expect(m.matches('short-secret-0123456')).toBe(true);
  });
});

describe('RecentDeliveries', () => {
  it('remembers an acknowledged delivery for the TTL, forgets a failed one, and joins one in flight', async () => {
    let now = 1_000;
    const recent = new RecentDeliveries({ capacity: 10, ttlMs: 5_000, now: () => now });
    const key = deliveryKey('h1', 'd1');
    expect(recent.lookup(key)).toBeUndefined();

    let finish!: () => void;
    recent.track(key, new Promise<void>((r) => (finish = r)));
    const seen = recent.lookup(key);
    expect(seen?.state).toBe('pending');
    finish();
    expect(await (seen as { settled: Promise<boolean> }).settled).toBe(true);
    expect(recent.lookup(key)).toEqual({ state: 'done' });
    now += 4_999;
    expect(recent.lookup(key)).toEqual({ state: 'done' });
    now += 1;
    expect(recent.lookup(key)).toBeUndefined();

    const failing = Promise.reject(new Error('stream down'));
    recent.track(deliveryKey('h1', 'd2'), failing);
    const pending = recent.lookup(deliveryKey('h1', 'd2'));
    expect(await (pending as { settled: Promise<boolean> }).settled).toBe(false);
    expect(recent.lookup(deliveryKey('h1', 'd2'))).toBeUndefined();
  });

  it('is bounded: the least recently used id goes first, and a lookup counts as use', async () => {
    const recent = new RecentDeliveries({ capacity: 3, ttlMs: 60_000 });
    for (const id of ['a', 'b', 'c']) recent.track(id, Promise.resolve());
    await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    expect(recent.lookup('a')).toEqual({ state: 'done' }); // a is now the most recent
    recent.track('d', Promise.resolve());
    expect(recent.size).toBe(3);
    expect(recent.lookup('b')).toBeUndefined();
    expect(recent.lookup('a')?.state).toBe('done');
    expect(recent.lookup('c')?.state).toBe('done');
  });

  it("keeps one hook's ids apart from another's, and capacity 0 remembers nothing", () => {
    expect(deliveryKey('h1', 'x')).not.toBe(deliveryKey('h2', 'x'));
    const off = new RecentDeliveries({ capacity: 0, ttlMs: 60_000 });
    off.track('k', Promise.resolve());
    expect(off.lookup('k')).toBeUndefined();
  });
});

describe('InFlightLimit', () => {
  it('refuses past either limit without waiting, and gives back exactly what was taken', () => {
    const changes: number[][] = [];
    const limit = new InFlightLimit({ maxDeliveries: 2, maxBytes: 1000, onChange: (n, b) => changes.push([n, b]) });
    const a = limit.tryAcquire(600)!;
    expect(limit.tryAcquire(500)).toBeUndefined(); // bytes
    const b = limit.tryAcquire(400)!;
    expect(limit.tryAcquire(1)).toBeUndefined(); // deliveries
    a.shrink(100);
    expect(limit.bytes).toBe(500);
    a.release();
    a.release(); // idempotent
    b.release();
    expect([limit.deliveries, limit.bytes]).toEqual([0, 0]);
    expect(changes.reduce(([n, by], [dn, db]) => [n! + dn!, by! + db!], [0, 0])).toEqual([0, 0]);
  });

  it('holds a slot past release() until the work it waits for settles, failed or not', async () => {
    const limit = new InFlightLimit({ maxDeliveries: 2, maxBytes: 1000 });
    const permits = [limit.tryAcquire(10)!, limit.tryAcquire(20)!];
    const settle: Array<() => void> = [];
    permits[0]!.holdUntil(new Promise<void>((resolve) => settle.push(resolve)));
    permits[1]!.holdUntil(new Promise<void>((_, reject) => settle.push(() => reject(new Error('append failed')))));
    for (const p of permits) p.release();
    expect([limit.deliveries, limit.bytes]).toEqual([2, 30]);
    for (const s of settle) s();
    await expect.poll(() => [limit.deliveries, limit.bytes]).toEqual([0, 0]);
  });

  it('admits one delivery larger than the byte limit when nothing else is in flight', () => {
    const limit = new InFlightLimit({ maxDeliveries: 5, maxBytes: 100 });
    const big = limit.tryAcquire(5000)!;
    expect(big).toBeDefined();
    expect(limit.tryAcquire(1)).toBeUndefined();
    big.release();
  });
});

describe('nestingExceeds', () => {
  it('counts brackets outside strings only, iteratively', () => {
    expect(nestingExceeds(Buffer.from('[[[]]]'), 3)).toBe(false);
    expect(nestingExceeds(Buffer.from('[[[[]]]]'), 3)).toBe(true);
    expect(nestingExceeds(Buffer.from('["[[[[\\"[[[["]'), 2)).toBe(false);
    expect(nestingExceeds(Buffer.from('{'.repeat(1_000_000)), 1000)).toBe(true);
  });

  it('walks only bodies with more opening brackets than the limit, and then exactly', () => {
    const shallow = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ i, tags: ['a'] }))); // 201 brackets, 3 deep
    expect(nestingExceeds(Buffer.from(shallow), 3)).toBe(false);
    expect(nestingExceeds(Buffer.from(`[${shallow}]`), 4)).toBe(false);
    expect(nestingExceeds(Buffer.from(`[${shallow}]`), 3)).toBe(true);
    // Few brackets: the count alone answers, whatever the strings hold.
    expect(nestingExceeds(Buffer.from('{"a":"[{[{"}'), 2)).toBe(false);
    expect(nestingExceeds(Buffer.from('{"a":[{"b":[]}]}'), 4)).toBe(false);
    expect(nestingExceeds(Buffer.from('{"a":[{"b":[]}]}'), 3)).toBe(true);
    expect(nestingExceeds(new Uint8Array(Buffer.from('[[[[]]]]')), 3)).toBe(true);
  });
});

describe('event hook config', () => {
  const hook = { id: 'h1', org: 'acme', auth: { secrets: ['0123456789abcdef'] } };

  it('has receiver defaults: bounded in-flight work, a dedupe window, a 2 s budget and slow-client time-outs', () => {
    const c = parseConfig({ event_hooks: [hook] }, {});
    expect(c.event_hook_receiver).toEqual({
      max_in_flight_deliveries: 512,
      max_in_flight_bytes: 64 * 1024 * 1024,
      retry_after_seconds: 1,
      dedupe_capacity: 100_000,
      dedupe_ttl_ms: 3_600_000,
    });
    expect(c.server.ack_timeout_ms).toBe(2000);
    expect(c.server.headers_timeout_ms).toBeLessThan(c.server.request_timeout_ms);
    expect(c.event_hooks[0]!.expected_source).toBeUndefined();
  });

  it('pins the source to <org_url>/api/v1/eventHooks/<hook_id> and rejects unknown keys and bad values, naming them', () => {
    const c = parseConfig(
      {
        event_hooks: [
          { ...hook, expected_source: { org_url: 'https://acme.okta.com/', hook_id: 'who7hphp39JoHLni81d7' } },
        ],
      },
      {},
    );
    expect(expectedSourceOf(c.event_hooks[0]!.expected_source!)).toBe(
      'https://acme.okta.com/api/v1/eventHooks/who7hphp39JoHLni81d7',
    );
    expect(() =>
      parseConfig({ event_hooks: [{ ...hook, expected_source: { org_url: 'ftp://x', hook_id: 'w' } }] }, {}),
    ).toThrow(/event_hooks\.0\.expected_source\.org_url/);
    expect(() => parseConfig({ event_hook_receiver: { max_in_flight: 3 } }, {})).toThrow(
      /event_hook_receiver.*"max_in_flight"/,
    );
    expect(() => parseConfig({ server: { headers_timeout_ms: 20_000, request_timeout_ms: 10_000 } }, {})).toThrow(
      /server\.request_timeout_ms.*headers_timeout_ms/,
    );
  });
});
