/**
 * The identity service's rate limits, read from `X-Rate-Limit-Limit`,
 * `-Remaining` and `-Reset` (UTC epoch seconds) on every reply, and a budget
 * that keeps one poller within its configured share of the bucket.
 *
 * The bucket is shared with every other client of the org, and reaching 100%
 * raises "violation" events and e-mails to the org's admins, so the budget
 * holds two limits at once: at most `share × limit` requests of ours per
 * window, and never the request that would leave the bucket below `reserve`
 * (it stops short of exhausting it even when other clients used the rest).
 * Requests of one budget run one at a time (one poll loop per bucket), but
 * in-flight requests are counted anyway so a second caller cannot overshoot.
 */
import { sleep } from '../../platform/retry.js';

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

export interface RateBudgetOptions {
  /** Fraction of the bucket this budget may use per window, in (0, 1]. */
  readonly share: number;
  /** Requests always left in the bucket. Default 1: never the request that exhausts it. */
  readonly reserve?: number;
  /** Waited after a window's reset before assuming it refilled (clock skew, rounding of Reset to seconds). */
  readonly resetMarginMs?: number;
  readonly now?: () => number;
  readonly random?: () => number;
}

/** What `plan` decided: go now, or wait until `untilMs`. */
export type BudgetDecision = { readonly go: true } | { readonly go: false; readonly untilMs: number; readonly why: 'share' | 'reserve' | 'blocked' };

export class RateBudget {
  readonly share: number;
  readonly reserve: number;
  readonly #marginMs: number;
  readonly #now: () => number;
  readonly #random: () => number;
  #state: RateLimitState | null = null;
  /** Our requests answered in the window that resets at `#state.resetAtMs`. */
  #used = 0;
  #inFlight = 0;
  /** After a 429: no request before this, whatever the headers said. */
  #blockedUntilMs = 0;
  /**
   * How far our clock runs ahead of the service's, learned from replies that
   * still report a window our clock says has ended. Reset is the service's
   * time: without this, a fast local clock would keep "probing a new window"
   * past the share and the reserve.
   */
  #skewMs = 0;

  constructor(opts: RateBudgetOptions) {
    if (!(opts.share > 0 && opts.share <= 1)) throw new RangeError(`share must be in (0, 1], got ${opts.share}`);
    this.share = opts.share;
    this.reserve = opts.reserve ?? 1;
    this.#marginMs = opts.resetMarginMs ?? 100;
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
  }

  /** Requests of ours allowed per window for a bucket of `limit`: the share, but never into the reserve. */
  allowedPerWindow(limit: number): number {
    return Math.max(1, Math.min(Math.floor(limit * this.share), limit - this.reserve));
  }

  /** The last headers seen, with our own count in their window. */
  get snapshot(): { state: RateLimitState | null; used: number; inFlight: number; blockedUntilMs: number } {
    return { state: this.#state, used: this.#used, inFlight: this.#inFlight, blockedUntilMs: this.#blockedUntilMs };
  }

  /** Pure decision for the current moment; `acquire` acts on it. */
  plan(): BudgetDecision {
    const now = this.#now();
    if (now < this.#blockedUntilMs) return { go: false, untilMs: this.#blockedUntilMs, why: 'blocked' };
    const s = this.#state;
    const resetAt = s ? s.resetAtMs + this.#skewMs + this.#marginMs : 0;
    // Nothing known yet, or the window has rolled over: one request finds out where we stand.
    if (!s || now >= resetAt) return this.#inFlight === 0 ? { go: true } : { go: false, untilMs: now + 50, why: 'blocked' };
    const wake = resetAt + Math.floor(this.#random() * this.#marginMs);
    if (this.#used + this.#inFlight >= this.allowedPerWindow(s.limit)) return { go: false, untilMs: wake, why: 'share' };
    if (s.remaining - this.#inFlight - 1 < this.reserve) return { go: false, untilMs: wake, why: 'reserve' };
    return { go: true };
  }

  /**
   * Waits until a request fits the budget, then counts it as in flight.
   * Resolves false when `signal` aborted first. Every acquire must be
   * followed by exactly one `settle`.
   */
  async acquire(signal?: AbortSignal, onWait?: (ms: number, why: string) => void): Promise<boolean> {
    for (;;) {
      if (signal?.aborted) return false;
      const d = this.plan();
      if (d.go) {
        this.#inFlight++;
        return true;
      }
      const ms = Math.max(1, d.untilMs - this.#now());
      onWait?.(ms, d.why);
      await sleep(ms, signal);
    }
  }

  /**
   * Records the reply to an acquired request: its rate-limit headers (null
   * when absent), and when the request was sent (default now). The service
   * answered before its Reset, so by our clock that was no earlier than
   * `sentAtMs`: a Reset before it measures our clock's lead, unaffected by
   * how long the reply took. Only answers (`learnSkew`) teach it: a 429's
   * Reset is often stale or invented by a proxy, and is handled on its own.
   */
  settle(state: RateLimitState | null, sentAtMs: number = this.#now(), learnSkew = true): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    if (!state) return;
    if (learnSkew && state.resetAtMs <= sentAtMs) this.#skewMs = Math.min(MAX_SKEW_MS, Math.max(this.#skewMs, sentAtMs - state.resetAtMs + this.#marginMs));
    const prev = this.#state;
    if (!prev || state.resetAtMs !== prev.resetAtMs) {
      // A new window: ours is the first request counted in it (others may have used some: Remaining says).
      // A reply from an older window arriving late must not roll us back.
      if (prev && state.resetAtMs < prev.resetAtMs) return;
      this.#state = state;
      this.#used = 1;
      return;
    }
    this.#used++;
    // Replies can arrive out of order: the lowest Remaining of the window is the truth.
    this.#state = { ...state, remaining: Math.min(prev.remaining, state.remaining) };
  }

  /** A request that never reached the service (network error before sending, abort): not counted. */
  cancel(): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
  }

  /** After a 429: nothing before `untilMs`, and the current window counts as exhausted. */
  blockUntil(untilMs: number): void {
    this.#blockedUntilMs = Math.max(this.#blockedUntilMs, untilMs);
    if (this.#state) this.#state = { ...this.#state, remaining: 0 };
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
