/**
 * The analysts' console, mounted on hooklog's HTTP app at /console (as
 * bull-board's Koa adapter mounts its router): sign-in through the identity
 * service, pages served from the package (no CDN), a JSON API under
 * /console/api, and alert triage appended through the stream. cli/ composes
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
import type { ConsoleConfig } from './config.js';
import type { ConsoleContext, Operations, QueryLibrary, RuleInfo } from './context.js';
import { OidcClient } from './oidc.js';
import { mountPages } from './pages.js';
import { AttemptLimiter } from './rate-limit.js';
import { SessionKeys } from './session.js';
import { mountSignIn } from './sign-in.js';

export { alertStatesPipeline, alertStatesTopic } from './alert-states.js';
export type { Operations, QueryLibrary, RuleInfo } from './context.js';

export interface ConsoleDeps {
  readonly config: ConsoleConfig;
  /** `api.keys`: keys may read (and, scoped as analyst, change) through /console/api. */
  readonly keys: readonly ApiKeyEntry[];
  readonly store: Store;
  readonly stream: Stream;
  readonly topic: string;
  readonly knownOrgs: readonly string[];
  readonly queries: QueryLibrary;
  readonly operations: Operations;
  readonly rules?: RuleInfo;
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
  const auth = new ConsoleAuth(sessions, new ApiKeyring(d.keys), publicUrl, now);
  const c: ConsoleContext = {
    config: d.config,
    store: d.store,
    stream: d.stream,
    topic: d.topic,
    knownOrgs: d.knownOrgs,
    queries: d.queries,
    operations: d.operations,
    rules: d.rules ?? (() => undefined),
    auth,
    log,
    now,
  };
  mountSignIn(router, {
    oidc: new OidcClient(oidc, `${publicUrl.replace(/\/$/, '')}/console/auth/callback`),
    sessions,
    auth,
    limiter: new AttemptLimiter(d.config.sign_in_attempts_per_minute),
    log,
    now,
  });
  mountApi(router, c);
  mountChanges(router, c);
  mountPages(router, c);
}
