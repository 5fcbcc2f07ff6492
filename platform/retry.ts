/**
 * One retrier; policies are data. Requests get bounded policies, sinks that hold
 * offsets uncommitted get unbounded ones with a capped delay (they must not give
 * up, or they would have to either drop data or commit past it).
 */
export interface RetryPolicy {
  /** Delay before the first retry. */
  readonly initialMs: number;
  /** Growth factor per attempt. */
  readonly multiplier: number;
  /** Cap on a single delay. */
  readonly maxMs: number;
  /** Retries after the first attempt; `Infinity` retries until the signal aborts. */
  readonly retries: number;
  /** Fraction of each delay randomised (0..1), so many clients do not retry in lockstep. */
  readonly jitter: number;
}

export const RetryPolicies = {
  /** Store inserts holding uncommitted offsets: never give up, never hammer. */
  sink: { initialMs: 200, multiplier: 2, maxMs: 30_000, retries: Infinity, jitter: 0.2 },
  /** Start-up connections (broker, store) before the process reports ready. */
  startup: { initialMs: 250, multiplier: 2, maxMs: 5_000, retries: 12, jitter: 0.2 },
  /** A Kafka group member kafkajs gave up on: back in seconds, never hammering a broker that refuses it. */
  rejoin: { initialMs: 1_000, multiplier: 2, maxMs: 30_000, retries: Infinity, jitter: 0.2 },
  /** A single request on someone's latency path. */
  request: { initialMs: 100, multiplier: 2, maxMs: 1_000, retries: 3, jitter: 0.2 },
} as const satisfies Record<string, RetryPolicy>;

/** Delay before retry number `attempt` (1-based), jitter applied with `random` in [0,1). */
export function backoffDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(policy.maxMs, policy.initialMs * policy.multiplier ** Math.max(0, attempt - 1));
  const spread = base * policy.jitter;
  return Math.max(0, Math.round(base - spread + 2 * spread * random()));
}

export interface RetryOptions {
  policy: RetryPolicy;
  /** Decides whether an error is worth another attempt; non-retriable errors are thrown at once. */
  retriable: (err: unknown) => boolean;
  signal?: AbortSignal;
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/** Runs `fn` until it succeeds, the error is not retriable, the policy is exhausted or `signal` aborts. */
export async function retry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (!opts.retriable(err) || attempt >= opts.policy.retries || opts.signal?.aborted) throw err;
      const delay = backoffDelay(opts.policy, attempt + 1);
      opts.onRetry?.(err, attempt + 1, delay);
      await sleep(delay, opts.signal);
      if (opts.signal?.aborted) throw err;
    }
  }
}

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
