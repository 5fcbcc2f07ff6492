/**
 * How the identity-service client waits, as data (see platform/retry.ts).
 * A poller must never skip a page, so transient failures are retried without
 * limit (capped delay; stopping aborts the wait). What retrying cannot fix —
 * a refused key, an API the org does not have, a request the service rejects
 * — is thrown to the poller, which reports it once and retries slowly.
 */
import type { RetryPolicy } from '../retry.js';

export interface IdpPolicies {
  /** 5xx, 500 E0000009 (a query that ran over 30 s), network errors, time-outs, unreadable bodies. */
  readonly transient: RetryPolicy;
  /** A 429 whose Reset is missing or already past: back off instead of spinning. */
  readonly rateLimitedFallback: RetryPolicy;
  /** Added to a 429's Reset so many clients do not return in the same millisecond. */
  readonly resetJitter: { readonly jitterMinMs: number; readonly jitterMaxMs: number; readonly maxMs: number };
  /** After an error retrying cannot fix (403 not enabled, refused credentials, 400): a slow retry. */
  readonly blocked: RetryPolicy;
  /** The stream refused the page: retry the append (the page is held, not refetched). */
  readonly append: RetryPolicy;
  /**
   * Management calls (`IdentityClient.send`): transient failures retried a few times, since a caller
   * waits (a command, a delivery loop that retries the whole call on its own schedule).
   */
  readonly management: RetryPolicy;
  /**
   * A command's management calls (`hooks plan|apply`, one pass of the hook watch): the most they wait in all
   * for rate limits (a 429's Reset, the share of a bucket). A wait that would end later fails the call at once
   * with IDP_RATE_LIMITED, naming when it would have ended: an org answering 429 to everything fails the
   * command instead of hanging it. Two windows of a minute: a share spent by the watch, then a 429's window.
   */
  readonly commandWait: { readonly maxMs: number };
}

export const IdpRetryPolicies: IdpPolicies = {
  transient: { initialMs: 250, multiplier: 2, maxMs: 60_000, retries: Infinity, jitter: 0.3 },
  rateLimitedFallback: { initialMs: 1_000, multiplier: 2, maxMs: 60_000, retries: Infinity, jitter: 0.5 },
  // Okta's windows are a minute; a Reset further away than 5 minutes is not to be believed.
  resetJitter: { jitterMinMs: 100, jitterMaxMs: 1_000, maxMs: 300_000 },
  blocked: { initialMs: 60_000, multiplier: 2, maxMs: 1_800_000, retries: Infinity, jitter: 0.2 },
  append: { initialMs: 200, multiplier: 2, maxMs: 30_000, retries: Infinity, jitter: 0.2 },
  management: { initialMs: 250, multiplier: 2, maxMs: 8_000, retries: 5, jitter: 0.3 },
  commandWait: { maxMs: 120_000 },
};

/** The policies with some replaced (tests shorten the slow ones). */
export function withPolicies(overrides: Partial<IdpPolicies> = {}): IdpPolicies {
  return { ...IdpRetryPolicies, ...overrides };
}
