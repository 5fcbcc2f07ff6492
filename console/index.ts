/**
 * The analysts' console, mounted on hooklog's HTTP app at /console (as
 * bull-board's Koa adapter mounts its router): sign-in through the identity
 * service, pages served from the package (no CDN), a JSON API under
 * /console/api, and alert triage and saved searches appended through the stream. cli/ composes
 * it, handing in what other components own (the query library, status,
 * coverage) as functions.
 */
import type Router from '@koa/router';
import { ApiKeyring, type ApiKeyEntry } from '../platform/access.js';
import type { Logger } from '../platform/log.js';
import type { Store } from '../platform/store/index.js';
import type { Stream } from '../platform/stream/types.js';
import { mountApi } from './api-routes.js';
import { ConsoleAuth } from './auth.js';
import { mountChanges } from './changes.js';
import { mountSavedSearches } from './saved-search-routes.js';
import type { ConsoleConfig } from './config.js';
import type { ConsoleContext, Operations, QueryLibrary, RuleCaseRunner, RuleInfo, SearchEngine } from './context.js';
import { mountMakeRule } from './make-rule.js';
import { OidcClient } from './oidc.js';
import { mountPages } from './pages.js';
import { AttemptLimiter } from './rate-limit.js';
import { SessionKeys } from './session.js';
import { mountSignIn } from './sign-in.js';
import { revocationRecord, sessionRevocation, type Revocation, type RevocationView } from './revocations.js';

export { alertStatesPipeline, alertStatesTopic } from './alert-states.js';
export { savedSearchesPipeline, savedSearchesTopic } from './saved-searches.js';
export {
  consoleSessionsTopic,
  RevocationView,
  revocationRecord,
  userRevocation,
  type Revocation,
} from './revocations.js';
export type { Operations, QueryLibrary, RuleCaseRunner, RuleInfo } from './context.js';

export interface ConsoleDeps {
  readonly config: ConsoleConfig;
  /** `api.keys`: keys may read (and, scoped as analyst, change) through /console/api. */
  readonly keys: readonly ApiKeyEntry[];
  readonly store: Store;
  readonly stream: Stream;
  readonly topic: string;
  /** `<prefix>.console-sessions`: revocations of sessions (compacted). */
  readonly sessionsTopic: string;
  /** `<prefix>.saved-searches`: changes to saved searches (compacted by org and id). */
  readonly savedSearchesTopic: string;
  /**
   * The revocations in force, which the composition root starts (and stops) on `sessionsTopic`: until it is
   * current, session requests answer 503 (API keys are not affected).
   */
  readonly revocations: RevocationView;
  readonly knownOrgs: readonly string[];
  readonly queries: QueryLibrary;
  readonly operations: Operations;
  readonly search: SearchEngine;
  readonly rules?: RuleInfo;
  /** Runs a rule file's cases (the Search page's "Make a rule" checks what it hands out). */
  readonly ruleCases: RuleCaseRunner;
  readonly logger: Logger;
  /** The clock (tests move it to expire sessions). */
  readonly now?: () => number;
}

/** Mounts every console route; the config has been checked (enabled, with public_url, session_secret and oidc). */
export function mountConsole(router: Router, d: ConsoleDeps): void {
  const { public_url: publicUrl, session_secret: secret, oidc } = d.config;
  if (!publicUrl || !secret || !oidc) throw new Error('console: public_url, session_secret and oidc are required');
  const now = d.now ?? Date.now;
  const log = d.logger.child({ component: 'console' });
  const sessions = new SessionKeys(secret, d.config.session_ttl_minutes);
  // Durable on the stream first (every instance reads it from there), then held here at once.
  const revoke = async (r: Revocation) => {
    await d.stream.append(d.sessionsTopic, [revocationRecord(r)]);
    d.revocations.add(r);
  };
  const client = new OidcClient(oidc, `${publicUrl.replace(/\/$/, '')}/console/auth/callback`);
  const auth = new ConsoleAuth({
    sessions,
    keys: new ApiKeyring(d.keys),
    publicUrl,
    now,
    revocations: d.revocations,
    regrantMs: d.config.regrant_minutes * 60_000,
    regrant: (refreshToken, sub) => client.regrant(refreshToken, sub),
    revoke: (s, reason) => revoke(sessionRevocation(s, reason, s.principal.id, now())),
    log,
  });
  const c: ConsoleContext = {
    config: d.config,
    store: d.store,
    stream: d.stream,
    topic: d.topic,
    savedSearchesTopic: d.savedSearchesTopic,
    knownOrgs: d.knownOrgs,
    queries: d.queries,
    operations: d.operations,
    search: d.search,
    rules: d.rules ?? (() => undefined),
    ruleCases: d.ruleCases,
    auth,
    log,
    now,
  };
  mountSignIn(router, {
    oidc: client,
    sessions,
    auth,
    limiter: new AttemptLimiter(d.config.sign_in_attempts_per_minute),
    log,
    now,
    revoke: (s) => revoke(sessionRevocation(s, 'signed_out', s.principal.id, now())),
  });
  mountApi(router, c);
  mountMakeRule(router, c);
  mountChanges(router, c);
  mountSavedSearches(router, c);
  mountPages(router, c);
}
