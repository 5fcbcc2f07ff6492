/**
 * The query API: `GET /api/queries` lists the named queries and their
 * parameters; `GET /api/queries/:name?org=…&since=…&until=…` runs one and
 * answers `{ query, columns, rows }`. Every request needs one of the
 * configured API keys as a bearer token (compared in constant time). A wrong
 * parameter answers 400 naming it; an unknown query 404, and so does an org
 * the key may not see (platform/access.ts), before anything is read.
 *
 * Every refusal for who is asking (no key, a wrong key, another org's data) is
 * logged once as `api_refused` and counted in `hooklog_api_refusals_total`,
 * as the console does its own (platform/refusals.ts); the principal is the
 * key's configured name, never the key.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { HooklogError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import { refusalAudit } from '../platform/refusals.js';
import type { Store } from '../platform/store/index.js';
import { ApiKeyring, bearerToken, maySeeOrg, type Principal } from '../platform/access.js';
import type { ApiConfig } from './config.js';
import { QueryParamError } from './params.js';
import { describeQueries, findQuery } from './registry.js';
import { runNamedQuery } from './run.js';

const API_REFUSAL_REASONS = ['missing_key', 'wrong_key', 'other_org'] as const;

/**
 * Its own counter rather than a `surface` label on the console's: the query
 * API's 401s are mostly scripts and scanners at an exposed endpoint, the
 * console's refusals are signed-in people; an alert on either keeps its
 * meaning, and both add up in one PromQL sum.
 */
const recordRefusal = refusalAudit({
  metric: 'hooklog_api_refusals_total',
  help: 'Query API (/api/queries) requests refused for who asked, by reason: missing_key and wrong_key (answered 401), other_org (answered 404, as if it did not exist).',
  reasons: API_REFUSAL_REASONS,
  event: 'api_refused',
});

export interface QueryApiDeps {
  readonly api: ApiConfig;
  readonly store: Store;
  readonly logger: Logger;
}

/** Mounts the routes; does nothing when no key is configured. */
export function mountQueryApi(router: Router, deps: QueryApiDeps): void {
  if (deps.api.keys.length === 0) return;
  const keys = new ApiKeyring(deps.api.keys);
  const log = deps.logger.child({ component: 'query-api' });

  const authorised = (ctx: Context): Principal | undefined => {
    const header = ctx.get('authorization');
    const principal = keys.principalFor(bearerToken(header));
    if (principal) return principal;
    // Any Authorization header that is not a configured key (another scheme, an empty bearer) is a wrong one.
    recordRefusal(log, ctx, undefined, header === '' ? 'missing_key' : 'wrong_key');
    ctx.status = 401;
    ctx.set('www-authenticate', 'Bearer realm="hooklog"');
    ctx.body = { error: 'missing or wrong API key (send Authorization: Bearer <key>)' };
    return undefined;
  };

  router.get('/api/queries', (ctx) => {
    if (!authorised(ctx)) return;
    ctx.body = { queries: describeQueries() };
  });

  router.get('/api/queries/:name', async (ctx) => {
    const principal = authorised(ctx);
    if (!principal) return;
    const name = ctx.params.name ?? '';
    try {
      findQuery(name);
    } catch (err) {
      ctx.status = 404;
      ctx.body = { error: (err as Error).message };
      return;
    }
    const raw: Record<string, string> = {};
    for (const [k, v] of Object.entries(ctx.query)) {
      if (typeof v !== 'string') {
        ctx.status = 400;
        ctx.body = { error: `parameter "${k}": give it once`, param: k };
        return;
      }
      raw[k] = v;
    }
    // Another org's data does not exist for this key: the same 404 as an unknown query.
    if (raw.org !== undefined && !maySeeOrg(principal, raw.org)) {
      recordRefusal(log, ctx, principal, 'other_org', { org: raw.org });
      ctx.status = 404;
      ctx.body = { error: 'not found' };
      return;
    }
    const started = performance.now();
    try {
      const result = await runNamedQuery(deps.store, name, raw);
      ctx.body = { query: name, columns: result.columns, rows: result.rows };
      log.debug({ query: name, rows: result.rows.length, ms: Math.round(performance.now() - started) }, 'query_served');
    } catch (err) {
      if (err instanceof QueryParamError) {
        ctx.status = 400;
        ctx.body = { error: err.message, param: err.param };
        return;
      }
      const code = err instanceof HooklogError ? err.code : 'INTERNAL';
      log.warn({ query: name, code, err }, 'query_failed');
      ctx.status = code === 'STORE_UNAVAILABLE' || (err instanceof HooklogError && err.retriable) ? 503 : 500;
      ctx.body = { error: `the query failed (${code})` };
    }
  });
}
