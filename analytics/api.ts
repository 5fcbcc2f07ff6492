/**
 * The query API: `GET /api/queries` lists the named queries and their
 * parameters; `GET /api/queries/:name?org=…&since=…&until=…` runs one and
 * answers `{ query, columns, rows }`. Every request needs one of the
 * configured API keys as a bearer token (compared in constant time). A wrong
 * parameter answers 400 naming it; an unknown query 404, and so does an org
 * the key may not see (platform/access.ts), before anything is read.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { HooklogError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import type { Store } from '../platform/store/index.js';
import { ApiKeyring, bearerToken, maySeeOrg, type Principal } from '../platform/access.js';
import type { ApiConfig } from './config.js';
import { QueryParamError } from './params.js';
import { describeQueries, findQuery } from './registry.js';
import { runNamedQuery } from './run.js';

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
    const principal = keys.principalFor(bearerToken(ctx.get('authorization')));
    if (principal) return principal;
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
