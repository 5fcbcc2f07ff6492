/**
 * How the response consumers wait, as data (platform/retry.ts). Within one
 * call the org's client retries a transient failure (5xx, network, time-out)
 * a few times with these; past them the record's batch fails and the consumer
 * offers it again with its own capped backoff (RetryPolicies.sink: 200 ms
 * doubling to 30 s, without end), so an org that is down holds its partition
 * (lag, never loss) and the same SET bytes, or the same action, go out again.
 */
import type { RetryPolicy } from '../../platform/retry.js';

export interface ResponsePolicies {
  /** A SET push answered 5xx or not at all: the bytes are re-sent (the receiver dedupes the jti). */
  readonly setTransient: RetryPolicy;
  /** A management action answered 5xx or not at all (repeatable actions only; see perform.ts). */
  readonly actionTransient: RetryPolicy;
}

export const ResponseRetryPolicies: ResponsePolicies = {
  setTransient: { initialMs: 250, multiplier: 2, maxMs: 8_000, retries: 5, jitter: 0.3 },
  actionTransient: { initialMs: 250, multiplier: 2, maxMs: 8_000, retries: 5, jitter: 0.3 },
};
