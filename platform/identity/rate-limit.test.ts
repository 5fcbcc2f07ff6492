import { describe, expect, it } from 'vitest';
import { RateBudget, rateLimitedDelay, readRateLimit, type RateLimitState } from './rate-limit.js';

const headers = (h: Record<string, string>) => ({ get: (n: string) => h[n.toLowerCase()] ?? null });

describe('readRateLimit', () => {
  it('reads the three headers; Reset is epoch seconds', () => {
    expect(
      readRateLimit(
        headers({ 'x-rate-limit-limit': '20', 'x-rate-limit-remaining': '7', 'x-rate-limit-reset': '1700000060' }),
      ),
    ).toEqual({ limit: 20, remaining: 7, resetAtMs: 1_700_000_060_000 });
  });
  it('is null when a header is missing or malformed', () => {
    expect(readRateLimit(headers({ 'x-rate-limit-limit': '20', 'x-rate-limit-remaining': '7' }))).toBeNull();
    expect(
      readRateLimit(headers({ 'x-rate-limit-limit': 'x', 'x-rate-limit-remaining': '7', 'x-rate-limit-reset': '1' })),
    ).toBeNull();
    expect(
      readRateLimit(headers({ 'x-rate-limit-limit': '0', 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': '1' })),
    ).toBeNull();
    expect(
      readRateLimit(headers({ 'x-rate-limit-limit': '20', 'x-rate-limit-remaining': '-1', 'x-rate-limit-reset': '1' })),
    ).toBeNull();
  });
});

describe('RateBudget', () => {
  const at = (resetS: number, remaining: number, limit = 20): RateLimitState => ({
    limit,
    remaining,
    resetAtMs: resetS * 1000,
  });
  /** One request through the budget, answered with `state`. */
  const send = (b: RateBudget, state: RateLimitState | null) => {
    const c = b.tryAcquire();
    if (typeof c !== 'string') throw new Error(`budget refused: ${c.why}`);
    b.settle(c, state);
  };

  it('allows share × limit requests per window less one (room for a newcomer), then waits for the reset', () => {
    let now = 1_000_000;
    const b = new RateBudget({ share: 0.5, now: () => now, random: () => 0 });
    let sent = 0;
    for (let remaining = 19; ; remaining--) {
      const d = b.plan();
      if (!d.go) {
        expect(d.why).toBe('share');
        expect(d.untilMs).toBe(1_060_000 + 100);
        break;
      }
      sent++;
      send(b, at(1060, remaining));
    }
    expect(sent).toBe(9);
    now = 1_060_100;
    expect(b.plan().go).toBe(true); // the window rolled over: one request finds out
  });

  it('never takes the last request of the bucket, whoever used the rest', () => {
    const b = new RateBudget({ share: 1, now: () => 0, random: () => 0 });
    send(b, at(60, 2));
    expect(b.plan().go).toBe(true); // leaves 1
    send(b, at(60, 1));
    const d = b.plan();
    expect(d.go).toBe(false);
    expect(d.go === false && d.why).toBe('share'); // 19 of 20 spent: the share (capped below the reserve) is used up
    expect(b.allowedPerWindow(20)).toBe(19);
    expect(new RateBudget({ share: 0.01 }).allowedPerWindow(20)).toBe(1);
  });

  it('leaves room in the share for the one request a newcomer sends without knowing the window', () => {
    const b = new RateBudget({ share: 0.5, now: () => 0, random: () => 0 }); // 10 of 20
    for (let remaining = 19; b.plan().go; remaining--) send(b, at(60, remaining));
    expect(b.snapshot.used).toBe(9);
    // Another host takes the org over: it knows nothing of the window, so its first request goes...
    const newcomer = new RateBudget({ share: 0.5, now: () => 0, random: () => 0 });
    expect(newcomer.plan().go).toBe(true);
    send(newcomer, at(60, 10)); // ...and is the 10th: the share holds. Its reply says the window is spent.
    expect(newcomer.plan()).toMatchObject({ go: false, why: 'share' });
  });

  it('assumes the worst about who spent the window: other spending counts against the share', () => {
    const b = new RateBudget({ share: 0.5, now: () => 0, random: () => 0 }); // 10 of 20, 9 for one holder
    send(b, at(60, 12)); // 8 gone: ours or anyone's
    expect(b.plan().go).toBe(true);
    send(b, at(60, 11));
    expect(b.plan()).toMatchObject({ go: false, why: 'share' });
  });

  it('counts requests in flight, ignores a late reply from an older window, keeps the lowest Remaining', () => {
    const b = new RateBudget({ share: 0.15, now: () => 0, random: () => 0 }); // 3 of 20, 2 for one holder
    send(b, at(60, 19));
    const c = b.tryAcquire();
    expect(typeof c).toBe('string');
    expect(b.plan().go).toBe(false); // 1 answered + 1 in flight = 2
    b.settle(c as string, at(60, 15));
    b.settle(null, at(30, 19)); // older window: ignored
    expect(b.snapshot.state).toEqual(at(60, 15));
    b.settle(null, at(60, 17));
    expect(b.snapshot.state?.remaining).toBe(15);
  });

  it('after a 429 nothing goes before the block ends and the window counts as exhausted', () => {
    let now = 0;
    const b = new RateBudget({ share: 1, now: () => now, random: () => 0 });
    send(b, at(60, 10));
    b.blockUntil(5_000);
    expect(b.plan()).toEqual({ go: false, untilMs: 5_000, why: 'blocked' });
    now = 5_000;
    expect(b.plan().go).toBe(false); // remaining was set to 0 until the window resets
    now = 60_100;
    expect(b.plan().go).toBe(true);
  });

  it('after a 429 naming its own Reset, that Reset ends the wait, not the later window seen before', () => {
    let now = 0;
    const b = new RateBudget({ share: 1, now: () => now, random: () => 0 });
    send(b, at(60, 10)); // the last answer named a window ending at 60 s
    b.blockUntil(8_100, at(8, 0)); // a 429 whose own Reset is 8 s away
    expect(b.plan()).toEqual({ go: false, untilMs: 8_100, why: 'blocked' });
    now = 8_100;
    expect(b.plan().go).toBe(true); // one request finds out where the new window stands
    send(b, at(60, 5));
    b.blockUntil(9_000, { limit: 20, remaining: 0, resetAtMs: 5_000 }); // a Reset already past: the window known
    now = 9_000;
    expect(b.plan()).toMatchObject({ go: false, why: 'share' });
  });

  it("learns that its clock runs ahead of the service's instead of probing past the share", () => {
    let now = 62_000; // the service's window ends at 60 s by its clock; ours says 62 s
    const b = new RateBudget({ share: 0.15, now: () => now, random: () => 0 }); // 3 of 20, 2 for one holder
    expect(b.plan().go).toBe(true);
    send(b, at(60, 19)); // still the old window: our clock is ≥ 2 s fast
    expect(b.plan().go).toBe(true);
    send(b, at(60, 18));
    const d = b.plan();
    expect(d.go).toBe(false); // without the skew this would be "a new window" again
    expect(d.go === false && d.untilMs).toBeGreaterThanOrEqual(62_000);
    now = 64_300;
    expect(b.plan().go).toBe(true);
  });

  it('refuses a share outside (0, 1]', () => {
    expect(() => new RateBudget({ share: 0 })).toThrow(RangeError);
    expect(() => new RateBudget({ share: 1.5 })).toThrow(RangeError);
  });
});

describe('rateLimitedDelay', () => {
  const opts = { jitterMinMs: 100, jitterMaxMs: 1000, maxMs: 300_000 };
  it('waits until Reset plus jitter', () => {
    expect(rateLimitedDelay({ limit: 1, remaining: 0, resetAtMs: 10_000 }, 4_000, 999, opts, () => 0)).toBe(6_100);
    expect(rateLimitedDelay({ limit: 1, remaining: 0, resetAtMs: 10_000 }, 4_000, 999, opts, () => 0.999)).toBe(
      6_000 + 999,
    );
  });
  it('falls back to the backoff when Reset is past or missing: never 0, never a spin', () => {
    expect(rateLimitedDelay({ limit: 1, remaining: 0, resetAtMs: 1_000 }, 4_000, 2_000, opts)).toBe(2_000);
    expect(rateLimitedDelay(null, 4_000, 0, opts)).toBe(100);
  });
  it('does not believe a Reset far in the future', () => {
    expect(rateLimitedDelay({ limit: 1, remaining: 0, resetAtMs: 10 ** 13 }, 0, 1, opts)).toBe(300_000);
  });
});
