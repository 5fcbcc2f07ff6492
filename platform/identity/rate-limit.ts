/**
 * The identity service's rate limits, read from `X-Rate-Limit-Limit`,
 * `-Remaining` and `-Reset` (UTC epoch seconds) on every reply, and a budget
 * that keeps one poller within its configured share of the bucket.
 *
 * The bucket is shared with every other client of the org, and reaching 100%
 * raises "violation" events and e-mails to the org's admins, so the budget
 * holds two limits at once: at most `share × limit` requests per window, and
 * never the request that would leave the bucket below `reserve` (it stops
 * short of exhausting it even when other clients used the rest).
 *
 * Buckets: the service limits each endpoint on its own, so `/api/v1/logs`
 * and `/api/v1/events` are two buckets, each with its own headers; one token
 * polling both has a `rate_limit_share` of each (the config has one per API
 * section), never one share split between them.
 */
import { sleep } from '../retry.js';

export interface RateLimitState {
  readonly limit: number;
  readonly remaining: number;
  /** Epoch milliseconds at which the bucket refills. */
  readonly resetAtMs: number;
}

/** Minimal header access, so both fetch's Headers and plain records work. */
export interface HeaderSource {
  get(name: string): string | null;
}

function nonNegativeInt(v: string | null): number | null {
  if (v === null || !/^\s*\d{1,15}\s*$/.test(v)) return null;
  return Number(v);
}

/** The three headers, or null when any is missing or not a non-negative integer. */
export function readRateLimit(headers: HeaderSource): RateLimitState | null {
  const limit = nonNegativeInt(headers.get('x-rate-limit-limit'));
  const remaining = nonNegativeInt(headers.get('x-rate-limit-remaining'));
  const reset = nonNegativeInt(headers.get('x-rate-limit-reset'));
  if (limit === null || remaining === null || reset === null || limit === 0) return null;
  return { limit, remaining: Math.min(remaining, limit), resetAtMs: reset * 1000 };
}

/** A clock further off than this is a broken clock, not something to budget around. */
const MAX_SKEW_MS = 120_000;

/**
 * What every process spending one token's share of one bucket knows together:
 * the window's lowest Remaining, the requests in flight (by anyone of ours),
 * a 429's block and the clock skew. Kept in memory, or in a `BudgetLedger`
 * file shared by every process on the host and surviving restarts.
 */
export interface BudgetState {
  /** The last window seen; `remaining` is the lowest Remaining any reply of it reported. */
  readonly window: RateLimitState | null;
  /** Requests sent and not yet answered, by id, with when they were claimed. */
  readonly inFlight: Readonly<Record<string, number>>;
  /** After a 429: no request before this, whatever the headers said. */
  readonly blockedUntilMs: number;
  /** How far the local clock runs ahead of the service's (Reset is the service's time). */
  readonly skewMs: number;
}

export const EMPTY_BUDGET_STATE: BudgetState = { window: null, inFlight: {}, blockedUntilMs: 0, skewMs: 0 };

/** Where the shared state lives. `update` runs `fn` on the latest state and stores its result, exclusively. */
export interface BudgetStore {
  read(): BudgetState;
  update<T>(fn: (s: BudgetState) => { state: BudgetState; result: T }): T;
}

/** The state of this process only (tests, and processes without a data directory). */
export class MemoryBudgetStore implements BudgetStore {
  #s: BudgetState = EMPTY_BUDGET_STATE;
  read(): BudgetState {
    return this.#s;
  }
  update<T>(fn: (s: BudgetState) => { state: BudgetState; result: T }): T {
    const { state, result } = fn(this.#s);
    this.#s = state;
    return result;
  }
}

export interface RateBudgetOptions {
  /** Fraction of the bucket this budget may use per window, in (0, 1]. */
  readonly share: number;
  /** Requests always left in the bucket. Default 1: never the request that exhausts it. */
  readonly reserve?: number;
  /** Waited after a window's reset before assuming it refilled (clock skew, rounding of Reset to seconds). */
  readonly resetMarginMs?: number;
  /**
   * A request in flight this long is forgotten (its process died: a `kill -9`
   * between claim and reply). Default 120 s, above any request time-out.
   */
  readonly inFlightExpiryMs?: number;
  /** Default: this process's memory. A `BudgetLedger` shares the budget across processes and restarts. */
  readonly store?: BudgetStore;
  /** Told of every wait `acquire` makes (whoever acquires), for the owner's metrics: how long, and why. */
  readonly onWait?: (ms: number, why: string) => void;
  /** This process's id and how to tell whether another still runs (tests play other processes). */
  readonly pid?: number;
  readonly isAlive?: (pid: number) => boolean;
  readonly now?: () => number;
  readonly random?: () => number;
}

/** What `plan` decided: go now, or wait until `untilMs`. */
export type BudgetDecision =
  | { readonly go: true }
  | { readonly go: false; readonly untilMs: number; readonly why: 'share' | 'reserve' | 'blocked' };

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Room left in every window's share for one request sent blind. A poller that takes an org over on
 * another host (no shared ledger), or restarts without its ledger, knows nothing of the current window
 * until its first reply: that request may land in a window the previous holder has spent. Every holder
 * therefore stops one short of the share, so that newcomer's request still fits it. Its reply then
 * counts everything the bucket lost, and it spends no more in that window. A second blind newcomer in
 * the same window would exceed the share by one: the room covers one hand-over or ledger-less restart
 * per window.
 */
const PROBE_ROOM = 1;

/** A claimed request: settle or cancel it exactly once. */
export type BudgetClaim = string;

/** A wait the budget asks for: until when, and why (share, reserve, blocked). */
export interface BudgetWait {
  readonly untilMs: number;
  readonly why: string;
}

let claimSeq = 0;

/**
 * A token's share of one rate-limit bucket (one org, one API).
 *
 * It assumes the worst about who spent the window: everything the bucket
 * lost (`limit − lowest Remaining`) counts against our share, plus every
 * request of ours still in flight. So the share holds whichever process of
 * ours spent the window (a live poller, a backfill beside it, the process
 * that ran before a restart) — at the price of yielding to the org's other
 * clients when they are busy. With a shared `BudgetLedger`, a restarted
 * process resumes the window it knew instead of probing it blind, and the
 * first request of a new window (the only one sent without knowing the
 * window) is sent by one process at a time.
 */
export class RateBudget {
  readonly share: number;
  readonly reserve: number;
  readonly #marginMs: number;
  readonly #expiryMs: number;
  readonly #store: BudgetStore;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #pid: number;
  readonly #isAlive: (pid: number) => boolean;
  readonly #onWait: ((ms: number, why: string) => void) | undefined;

  constructor(opts: RateBudgetOptions) {
    if (!(opts.share > 0 && opts.share <= 1)) throw new RangeError(`share must be in (0, 1], got ${opts.share}`);
    this.share = opts.share;
    this.reserve = opts.reserve ?? 1;
    this.#marginMs = opts.resetMarginMs ?? 100;
    this.#expiryMs = opts.inFlightExpiryMs ?? 120_000;
    this.#store = opts.store ?? new MemoryBudgetStore();
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
    this.#pid = opts.pid ?? process.pid;
    this.#isAlive = opts.isAlive ?? processAlive;
    this.#onWait = opts.onWait;
  }

  /**
   * Requests this holder may spend per window for a bucket of `limit`: the share less the one request
   * a newcomer sends without knowing the window (PROBE_ROOM), but never into the reserve.
   */
  allowedPerWindow(limit: number): number {
    return Math.max(1, Math.min(Math.floor(limit * this.share) - PROBE_ROOM, limit - this.reserve));
  }

  /** The last headers seen, the window's use as the budget counts it, and requests in flight. */
  get snapshot(): { state: RateLimitState | null; used: number; inFlight: number; blockedUntilMs: number } {
    const s = this.#live(this.#store.read(), this.#now());
    const inFlight = Object.keys(s.inFlight).length;
    return {
      state: s.window,
      used: s.window ? s.window.limit - s.window.remaining + inFlight : inFlight,
      inFlight,
      blockedUntilMs: s.blockedUntilMs,
    };
  }

  /** Pure decision for the current moment on the latest shared state; `acquire` acts on it. */
  plan(): BudgetDecision {
    return this.#decide(this.#live(this.#store.read(), this.#now()), this.#now());
  }

  /**
   * The state without claims that can no longer matter: any older than the
   * expiry, and those of a process that died (`kill -9` between claim and
   * reply) once the window they were made in has ended. Within that window a
   * dead process's request still counts: it may have reached the service
   * after the last Remaining we saw.
   */
  #live(s: BudgetState, now: number): BudgetState {
    let dropped = false;
    const ended = !s.window || now >= s.window.resetAtMs + s.skewMs + this.#marginMs;
    const inFlight: Record<string, number> = {};
    for (const [id, at] of Object.entries(s.inFlight)) {
      const pid = Number.parseInt(id, 10);
      const dead = pid !== this.#pid && !this.#isAlive(pid);
      if (now - at < this.#expiryMs && !(dead && ended)) inFlight[id] = at;
      else dropped = true;
    }
    return dropped ? { ...s, inFlight } : s;
  }

  #decide(s: BudgetState, now: number): BudgetDecision {
    if (now < s.blockedUntilMs) return { go: false, untilMs: s.blockedUntilMs, why: 'blocked' };
    const w = s.window;
    const inFlight = Object.keys(s.inFlight).length;
    const resetAt = w ? w.resetAtMs + s.skewMs + this.#marginMs : 0;
    // Nothing known yet, or the window has rolled over: one request (of all our processes) finds out where we
    // stand. Only a request claimed since the roll-over is such a probe: one claimed before it belongs to the
    // last window's count, and may never be answered (a paused process is alive and silent until its claim
    // expires), so waiting for it would stall every window's first request meanwhile. It still counts, once
    // the window is known.
    if (!w) return inFlight === 0 ? { go: true } : { go: false, untilMs: now + 50, why: 'blocked' };
    if (now >= resetAt) {
      const probing = Object.values(s.inFlight).some((at) => at >= resetAt);
      return probing ? { go: false, untilMs: now + 50, why: 'blocked' } : { go: true };
    }
    const wake = resetAt + Math.floor(this.#random() * this.#marginMs);
    if (w.limit - w.remaining + inFlight >= this.allowedPerWindow(w.limit))
      return { go: false, untilMs: wake, why: 'share' };
    if (w.remaining - inFlight - 1 < this.reserve) return { go: false, untilMs: wake, why: 'reserve' };
    return { go: true };
  }

  /**
   * Waits until a request fits the budget, then records it as in flight
   * (in the shared state, before it is sent). Resolves null when `signal`
   * aborted first, and, without waiting, the wait itself when it would end
   * after `deadlineMs` (a caller whose waits are bounded). Every claim must be
   * followed by exactly one `settle` or `cancel`.
   */
  async acquire(
    signal?: AbortSignal,
    onWait?: (ms: number, why: string) => void,
    deadlineMs?: number,
  ): Promise<BudgetClaim | BudgetWait | null> {
    for (;;) {
      if (signal?.aborted) return null;
      const claim = this.tryAcquire();
      if (typeof claim === 'string') return claim;
      if (deadlineMs !== undefined && claim.untilMs > deadlineMs) return claim;
      const ms = Math.max(1, claim.untilMs - this.#now());
      this.#onWait?.(ms, claim.why);
      onWait?.(ms, claim.why);
      await sleep(ms, signal);
    }
  }

  /** Claims a request now if the budget allows, else says until when to wait. */
  tryAcquire(): BudgetClaim | BudgetWait {
    return this.#store.update<BudgetClaim | BudgetWait>((s0) => {
      const now = this.#now();
      const s = this.#live(s0, now);
      const d = this.#decide(s, now);
      if (!d.go) return { state: s, result: { untilMs: d.untilMs, why: d.why } };
      const id = `${this.#pid}.${++claimSeq}`;
      return { state: { ...s, inFlight: { ...s.inFlight, [id]: now } }, result: id };
    });
  }

  /**
   * Records the reply to a claimed request: its rate-limit headers (null
   * when absent), and when the request was sent (default now). The service
   * answered before its Reset, so by our clock that was no earlier than
   * `sentAtMs`: a Reset before it measures our clock's lead, unaffected by
   * how long the reply took. Only answers (`learnSkew`) teach it: a 429's
   * Reset is often stale or invented by a proxy, and is handled on its own.
   */
  settle(
    claim: BudgetClaim | null,
    state: RateLimitState | null,
    sentAtMs: number = this.#now(),
    learnSkew = true,
  ): void {
    this.#store.update((s0) => {
      let s = this.#release(this.#live(s0, this.#now()), claim);
      if (!state) return { state: s, result: undefined };
      if (learnSkew && state.resetAtMs <= sentAtMs) {
        s = { ...s, skewMs: Math.min(MAX_SKEW_MS, Math.max(s.skewMs, sentAtMs - state.resetAtMs + this.#marginMs)) };
      }
      const prev = s.window;
      // A reply from an older window arriving late must not roll us back.
      if (prev && state.resetAtMs < prev.resetAtMs) return { state: s, result: undefined };
      // Replies can arrive out of order: the lowest Remaining of the window is the truth.
      const window =
        prev && state.resetAtMs === prev.resetAtMs
          ? { ...state, remaining: Math.min(prev.remaining, state.remaining) }
          : state;
      return { state: { ...s, window }, result: undefined };
    });
  }

  /** A request that never reached the service (network error before sending, abort): not counted. */
  cancel(claim: BudgetClaim | null): void {
    this.#store.update((s) => ({ state: this.#release(s, claim), result: undefined }));
  }

  #release(s: BudgetState, claim: BudgetClaim | null): BudgetState {
    if (claim === null || !(claim in s.inFlight)) return s;
    const inFlight = { ...s.inFlight };
    delete inFlight[claim];
    return { ...s, inFlight };
  }

  /**
   * After a 429: nothing before `untilMs` (for every process sharing the budget), and the window counts as
   * exhausted. The window is the 429's own when it names a Reset still ahead (`reset`, its headers): the
   * service says when that bucket refills, and a window seen earlier, ending later, would hold every request
   * back past it (a 429 whose Reset was 8 s away stalled a command for the 55 s left of the last window seen).
   * Without a usable Reset, the last window seen is what is known.
   */
  blockUntil(untilMs: number, reset: RateLimitState | null = null): void {
    this.#store.update((s) => {
      const own = reset !== null && reset.resetAtMs > this.#now() ? { ...reset, remaining: 0 } : null;
      return {
        state: {
          ...s,
          blockedUntilMs: Math.max(s.blockedUntilMs, untilMs),
          window: own ?? (s.window ? { ...s.window, remaining: 0 } : null),
        },
        result: undefined,
      };
    });
  }
}

/**
 * How long to wait after a 429: until Reset plus jitter when Reset is a usable
 * future time; otherwise (missing, unparsable, already past: a skewed clock or a
 * proxy that strips headers) the fallback delay the caller computed from its
 * backoff policy. Never negative, never a spin, never beyond `maxMs`.
 */
export function rateLimitedDelay(
  state: RateLimitState | null,
  nowMs: number,
  fallbackMs: number,
  opts: { jitterMinMs: number; jitterMaxMs: number; maxMs: number },
  random: () => number = Math.random,
): number {
  const jitter = opts.jitterMinMs + Math.floor(random() * Math.max(0, opts.jitterMaxMs - opts.jitterMinMs));
  if (!state || state.resetAtMs <= nowMs) return Math.min(opts.maxMs, Math.max(fallbackMs, opts.jitterMinMs));
  return Math.min(opts.maxMs, state.resetAtMs - nowMs + jitter);
}
