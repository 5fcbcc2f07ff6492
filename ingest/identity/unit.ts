/**
 * The identity sync as one of the pollers' owned units (ingest/index.ts): its position key `identity:<org>` on
 * `<prefix>.cursors` decides which instance runs it, as a cursor key does for a poller; it appends through the
 * claimed owner of that key's partition, so a previous owner is fenced before the new one reads the position.
 */
import type { Authenticator } from '../../platform/identity/auth.js';
import { IdentityClient } from '../../platform/identity/client.js';
import type { IdpPolicies } from '../../platform/identity/policies.js';
import type { RateBudget } from '../../platform/identity/rate-limit.js';
import type { Logger } from '../../platform/log.js';
import type { ConsumedRecord, Stream, Transactor } from '../../platform/stream/types.js';
import type { OrgConfig } from '../config.js';
import { identityCursorKey, readIdentityPosition } from './position.js';
import { userIdOfKey } from './records.js';
import { IdentitySync } from './sync.js';

export interface IdentityUnitDeps {
  readonly stream: Stream;
  readonly identityTopic: string;
  readonly cursorsTopic: string;
  readonly logger: Logger;
  readonly policies: IdpPolicies;
  readonly schedule: <T>(fn: () => Promise<T>, signal?: AbortSignal) => Promise<T>;
  /** The org's share of a management family's bucket (`users`, `groups`), in the host's ledger. */
  readonly budget: (family: 'users' | 'groups', share: number) => RateBudget;
}

export interface IdentityUnit {
  readonly key: string;
  readonly budget: RateBudget;
  start(tx: Transactor, latest: ReadonlyMap<string, ConsumedRecord>, onFenced: () => void): IdentitySync;
}

export function identityUnit(org: OrgConfig, auth: Authenticator, deps: IdentityUnitDeps): IdentityUnit {
  const s = org.identity_sync;
  const budgets = {
    users: deps.budget('users', s.rate_limit_share),
    groups: deps.budget('groups', s.rate_limit_share),
  };
  const log = deps.logger.child({ component: 'identity-sync', org: org.id });
  const client = new IdentityClient({
    org: org.id,
    baseUrl: org.base_url,
    auth,
    requestTimeoutMs: org.request_timeout_ms,
    schedule: deps.schedule,
    policies: deps.policies,
    events: {
      retry: (err, attempt, delayMs) => log.warn({ err, attempt, delay_ms: delayMs }, 'identity_sync_retry'),
      rateLimited: (delayMs, resetKnown, wait) =>
        log.warn(
          {
            wait_ms: delayMs,
            reset_known: resetKnown,
            ...(wait ? { until: new Date(wait.untilMs).toISOString() } : {}),
          },
          `${wait?.what ?? `org ${org.id}`}: rate limited (429): waiting`,
        ),
    },
  });
  // Which of the org's users have a live record: read from the identity topic when the first full pass needs it.
  const known = async () => {
    const latest = await deps.stream.readLatestByKey(deps.identityTopic);
    const ids: string[] = [];
    for (const [key, rec] of latest) {
      const id = userIdOfKey(org.id, key);
      if (id !== null && rec.value.length > 0) ids.push(id);
    }
    return ids;
  };
  return {
    key: identityCursorKey(org.id),
    budget: budgets.users,
    start(tx, latest, onFenced) {
      const sync = new IdentitySync({
        org: org.id,
        baseUrl: org.base_url,
        client,
        budgets,
        stream: tx,
        identityTopic: deps.identityTopic,
        cursorsTopic: deps.cursorsTopic,
        settings: { intervalMs: s.interval_ms, fullIntervalMs: s.full_interval_ms },
        position: readIdentityPosition(latest, org.id),
        known,
        logger: deps.logger,
        blocked: deps.policies.blocked,
        append: deps.policies.append,
        onFenced,
      });
      sync.start();
      return sync;
    },
  };
}
