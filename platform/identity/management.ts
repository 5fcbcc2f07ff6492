/**
 * The org's management API as its users get it: one `IdentityClient` with the
 * scopes the caller needs, and one rate budget per endpoint family. The service
 * limits each family on its own (hooks, users, groups, …), and its management
 * limits are shared with every admin and integration of the org, so each
 * family gets `management.rate_limit_share` of its bucket, kept in the same
 * host-wide ledger as the pollers' (`<data_dir>/rate-budget/`), so a command
 * (`hooklog hooks apply`) and a running instance stay within it together.
 */
import type { Logger } from '../log.js';
import { counter } from '../metrics.js';
import type { Authenticator } from './auth.js';
import { createAuthenticator } from './authenticator.js';
import { BudgetLedger, ledgerPath } from './budget-ledger.js';
import { IdentityClient, type ClientEvents } from './client.js';
import type { OrgIdentity } from './config.js';
import type { IdpPolicies } from './policies.js';
import { RateBudget } from './rate-limit.js';

/**
 * Time spent waiting for a family's share, whoever waited (the hook watch, `hooks apply`, response actions): a
 * caller asking more often than its share affords waits out the service's window silently otherwise, and whatever
 * it reports (the watch's gauges) lags by up to a window.
 */
const budgetWaits = counter({
  name: 'hooklog_management_budget_wait_seconds_total',
  help: "Seconds management API calls waited for the org's share of an endpoint family's rate limit (management.rate_limit_share), by family and why (share: this holder's share spent; reserve: the bucket nearly empty).",
  labelNames: ['org', 'family', 'why'],
});

/** An endpoint family with its own bucket. */
export type ManagementBucket = 'event-hooks' | 'inline-hooks' | 'users' | 'groups' | 'security-events';

export interface ManagementOptions {
  readonly org: OrgIdentity;
  /** OAuth scopes this user of the API needs (ignored for SSWS tokens). */
  readonly scopes: readonly string[];
  readonly logger: Logger;
  /** `<data_dir>/rate-budget`: budgets shared with the host's other hooklog processes; in memory without it. */
  readonly budgetDir?: string;
  readonly policies?: IdpPolicies;
  readonly events?: ClientEvents;
  /** Tests: a ready authenticator instead of one built from the config. */
  readonly auth?: Authenticator;
  /** A command: say at warn level, with until when, every wait for a family's share of a second or more. */
  readonly announceWaits?: boolean;
}

export interface Management {
  readonly org: string;
  readonly client: IdentityClient;
  /** The org's share of one family's bucket (one budget per family for the life of this object). */
  budget(bucket: ManagementBucket): RateBudget;
}

export async function openManagement(opts: ManagementOptions): Promise<Management> {
  const { org } = opts;
  const auth = opts.auth ?? (await createAuthenticator(org, opts.scopes, opts.logger));
  const warn = opts.logger.child({ component: 'management', org: org.id });
  const client = new IdentityClient({
    org: org.id,
    baseUrl: org.base_url,
    auth,
    requestTimeoutMs: Math.min(org.request_timeout_ms, 30_000),
    ...(opts.policies ? { policies: opts.policies } : {}),
    events: {
      ...opts.events,
      // Whoever waits (a command, the watch, a response action) says what for and until when: a 429 otherwise
      // holds a command silent until the service's window ends.
      rateLimited(delayMs, resetKnown, wait) {
        opts.events?.rateLimited?.(delayMs, resetKnown, wait);
        if (!wait) return;
        const until = new Date(wait.untilMs).toISOString();
        warn.warn(
          { wait_ms: delayMs, until, reset_known: resetKnown },
          `${wait.what}: rate limited (429): waiting until ${until} (${resetKnown ? "the reply's X-Rate-Limit-Reset" : 'the reply named no usable X-Rate-Limit-Reset: backing off'})`,
        );
      },
    },
  });
  const budgets = new Map<ManagementBucket, RateBudget>();
  return {
    org: org.id,
    client,
    budget(bucket) {
      let b = budgets.get(bucket);
      if (!b) {
        const log = opts.logger.child({ component: 'management', org: org.id, family: bucket });
        b = new RateBudget({
          share: org.management.rate_limit_share,
          onWait: (ms, why) => {
            budgetWaits.inc({ org: org.id, family: bucket, why }, ms / 1000);
            // A block is a 429's, which the client announces itself (with the reply's Reset).
            if (opts.announceWaits && ms >= 1000 && why !== 'blocked') {
              const until = new Date(Date.now() + ms).toISOString();
              log.warn(
                { wait_ms: ms, why, until },
                `org ${org.id}: waiting until ${until} for the ${bucket} rate limit (${why === 'share' ? 'management.rate_limit_share of it is spent' : 'the bucket is nearly empty'})`,
              );
            } else log.debug({ wait_ms: ms, why }, 'management_budget_wait');
          },
          ...(opts.budgetDir ? { store: new BudgetLedger(ledgerPath(opts.budgetDir, org.id, `mgmt-${bucket}`)) } : {}),
        });
        budgets.set(bucket, b);
      }
      return b;
    },
  };
}
