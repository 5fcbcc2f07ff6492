import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BudgetLedger, ledgerPath } from './budget-ledger.js';
import { RateBudget, type RateLimitState } from './rate-limit.js';

const at = (resetS: number, remaining: number, limit = 20): RateLimitState => ({
  limit,
  remaining,
  resetAtMs: resetS * 1000,
});

/** A fake service bucket: fixed 60 s windows, counts every request it receives. */
class Bucket {
  used = new Map<number, number>();
  constructor(readonly limit = 20) {}
  take(now: number): RateLimitState {
    const w = Math.floor(now / 60_000);
    const n = (this.used.get(w) ?? 0) + 1;
    this.used.set(w, n);
    return { limit: this.limit, remaining: Math.max(0, this.limit - n), resetAtMs: (w + 1) * 60_000 };
  }
  max(): number {
    return Math.max(0, ...this.used.values());
  }
}

describe('BudgetLedger: one share across processes and restarts', () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'hooklog-budget-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** Spends as much as the budget allows at `now`, against the bucket; returns the requests sent. */
  function drain(b: RateBudget, bucket: Bucket, now: number): number {
    let sent = 0;
    for (;;) {
      const c = b.tryAcquire();
      if (typeof c !== 'string') return sent;
      b.settle(c, bucket.take(now), now);
      sent++;
    }
  }

  it('a restart mid-window does not spend the share twice', () => {
    const path = ledgerPath(dir(), 'acme', 'logs');
    const bucket = new Bucket();
    let now = 1_000;
    const before = new RateBudget({ share: 0.5, store: new BudgetLedger(path), now: () => now, random: () => 0 });
    expect(drain(before, bucket, now)).toBe(9); // the share (10) less the room for a newcomer's blind request
    // The process dies; a new one (same file) starts in the same window.
    now = 30_000;
    const after = new RateBudget({ share: 0.5, store: new BudgetLedger(path), now: () => now, random: () => 0 });
    expect(drain(after, bucket, now)).toBe(0);
    expect(after.plan()).toMatchObject({ go: false, why: 'share', untilMs: 60_100 });
    // Without the ledger the same restart probes blind: that request takes the room the holder left.
    const amnesiac = new RateBudget({ share: 0.5, now: () => now, random: () => 0 });
    expect(drain(amnesiac, bucket, now)).toBe(1);
    expect(bucket.max()).toBe(10);
  });

  it('a process killed between claim and reply: its request counts until its window ends', () => {
    const path = ledgerPath(dir(), 'acme', 'logs');
    const bucket = new Bucket();
    let now = 1_000;
    const dead = new RateBudget({
      share: 0.5,
      store: new BudgetLedger(path),
      now: () => now,
      pid: 999_999,
      random: () => 0,
    });
    for (let i = 0; i < 8; i++) {
      const c = dead.tryAcquire();
      dead.settle(c as string, bucket.take(now), now);
    }
    expect(typeof dead.tryAcquire()).toBe('string'); // the 9th (its last) is sent; the process dies before the reply
    bucket.take(now);
    const next = new RateBudget({
      share: 0.5,
      store: new BudgetLedger(path),
      now: () => now,
      isAlive: () => false,
      random: () => 0,
    });
    expect(next.snapshot.inFlight).toBe(1);
    expect(drain(next, bucket, now)).toBe(0);
    now = 60_100; // the window ended: the dead claim no longer holds the new window's first request back
    expect(drain(next, bucket, now)).toBe(9);
    expect(bucket.max()).toBe(9);
  });

  it('two processes (a poller and a backfill) interleaving never exceed the share together', () => {
    const path = ledgerPath(dir(), 'acme', 'logs');
    const bucket = new Bucket();
    let now = 0;
    const mk = (pid: number) =>
      new RateBudget({
        share: 0.4,
        store: new BudgetLedger(path),
        now: () => now,
        pid,
        isAlive: () => true,
        random: () => 0,
      });
    const poller = mk(101);
    const backfill = mk(202);
    const sent = { poller: 0, backfill: 0 };
    for (now = 0; now < 5 * 60_000; now += 250) {
      // Each claims before either has its reply: the worst interleaving for header-only budgeting.
      const a = poller.tryAcquire();
      const b = backfill.tryAcquire();
      if (typeof a === 'string') {
        poller.settle(a, bucket.take(now), now);
        sent.poller++;
      }
      if (typeof b === 'string') {
        backfill.settle(b, bucket.take(now), now);
        sent.backfill++;
      }
    }
    expect(bucket.max()).toBe(7); // 40% of 20 less the newcomer's room, in every window, both together
    expect(sent.poller).toBeGreaterThan(0);
    expect(sent.backfill).toBeGreaterThan(0);
  });

  it('a 429 seen by one process holds the others back', () => {
    const path = ledgerPath(dir(), 'acme', 'logs');
    const now = 1_000;
    const a = new RateBudget({ share: 1, store: new BudgetLedger(path), now: () => now, random: () => 0 });
    const b = new RateBudget({ share: 1, store: new BudgetLedger(path), now: () => now, random: () => 0 });
    a.settle(a.tryAcquire() as string, at(60, 10), now);
    a.blockUntil(5_000);
    expect(b.plan()).toEqual({ go: false, untilMs: 5_000, why: 'blocked' });
  });

  it("a paused process's claim from the last window does not hold the new window's first request back", () => {
    const path = ledgerPath(dir(), 'acme', 'logs');
    const bucket = new Bucket();
    let now = 1_000;
    const mk = (pid: number) =>
      new RateBudget({
        share: 0.5,
        store: new BudgetLedger(path),
        now: () => now,
        pid,
        isAlive: () => true, // SIGSTOP: alive, answering nothing
        random: () => 0,
      });
    const zombie = mk(101);
    zombie.settle(zombie.tryAcquire() as string, bucket.take(now), now);
    expect(typeof zombie.tryAcquire()).toBe('string'); // sent, then the process is paused: never settled
    const owner = mk(202);
    now = 60_100; // a new window: one request of ours finds out where it stands, and nothing else is probing it
    expect(owner.plan().go).toBe(true);
    const probe = owner.tryAcquire();
    expect(typeof probe).toBe('string');
    expect(owner.plan().go).toBe(false); // a second blind request of the new window waits for the first
    owner.settle(probe as string, bucket.take(now), now);
    // The zombie's claim still counts against the share until it expires: 1 answered + 1 in flight.
    expect(owner.snapshot.used).toBe(2);
  });

  it('an unreadable file is an unknown window (one probe), not a crash', () => {
    const path = ledgerPath(dir(), 'acme', 'logs');
    writeFileSync(path, '{not json');
    const b = new RateBudget({ share: 0.5, store: new BudgetLedger(path), now: () => 0 });
    expect(b.plan().go).toBe(true);
  });

  it('a lock left by a killed process is taken over', () => {
    const path = ledgerPath(dir(), 'acme', 'logs');
    writeFileSync(`${path}.lock`, '999999');
    const b = new RateBudget({ share: 0.5, store: new BudgetLedger(path), now: () => 0 });
    expect(typeof b.tryAcquire()).toBe('string');
  });
});
