import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import type { Config } from './config/schema.js';
import type { Logger } from '../platform/log.js';
import { renderMetrics } from '../platform/metrics.js';
import type { Topics } from '../platform/stream/headers.js';
import type { Stream } from '../platform/stream/types.js';
import { createEventHooks, eventHookFastPath, mountEventHooks } from '../receivers/event-hooks/routes.js';
import type { FastRoute } from '../receivers/fast-path.js';
import { mountHealth, type Probe } from '../receivers/health/routes.js';
import { mountTokenHooks, tokenHookFastPath, type TokenHooks } from '../receivers/token-hook/index.js';
import { mountSsfReceivers, type SsfReceivers } from '../receivers/ssf/routes.js';
import { mountQueryApi } from '../analytics/api.js';
import type { Store } from '../platform/store/index.js';
import { mountSsfWellKnown, type SsfProvider } from '../receivers/ssf/well-known.js';
import { mountConsole, type ConsoleDeps } from '../console/index.js';

export interface AppDeps {
  readonly config: Config;
  readonly stream: Stream;
  readonly topics: Topics;
  readonly probes: readonly Probe[];
  readonly logger: Logger;
  /** Serve the hook routes (the receivers role). Default true. */
  readonly receivers?: boolean;
  /** Started token hooks (receivers/token-hook); without them /hooks/token/* is not served. */
  readonly tokenHooks?: TokenHooks;
  /** Started SSF receivers (receivers/ssf); without them /hooks/ssf/* is not served. */
  readonly ssf?: SsfReceivers;
  /** The store the query API (analytics/) reads; without it /api/queries is not served. */
  readonly store?: Store;
  /**
   * True while the store is not ready yet (its engine opening, its migrations running): the routes that read it,
   * the query API and the console, answer 503 with Retry-After meanwhile, while the hook routes are served.
   */
  readonly storeStarting?: () => boolean;
  /** hooklog as a security events provider: its SSF configuration and JWKS at the well-known URLs. */
  readonly ssfProvider?: SsfProvider;
  /** The console (console/), when enabled and this process serves HTTP for analysts. */
  readonly console?: ConsoleDeps;
}

/**
 * The Koa application: every HTTP route hooklog serves. Request headers are
 * never logged (hook secrets travel in headers with configurable names); each
 * request gets an id, echoed back in `x-request-id`.
 */
export function createApp(deps: AppDeps): Koa {
  // Behind a proxy, the client address is the one that proxy appended (the last X-Forwarded-For
  // entry): entries before it are whatever the client chose to send.
  const app = new Koa({ proxy: deps.config.server.trust_proxy, maxIpsCount: deps.config.server.trust_proxy ? 1 : 0 });
  const log = deps.logger.child({ component: 'http' });
  app.silent = true;
  app.on('error', (err: Error) => log.error({ err }, 'unhandled HTTP error'));

  app.use(async (ctx, next) => {
    const requestId = randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('x-request-id', requestId);
    const started = performance.now();
    try {
      await next();
    } catch (err) {
      log.error({ requestId, err }, 'request failed');
      ctx.status = 500;
      ctx.body = { error: 'internal error', requestId };
    }
    log.debug(
      {
        requestId,
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        ms: Math.round(performance.now() - started),
      },
      'request',
    );
  });

  if (deps.storeStarting) {
    const starting = deps.storeStarting;
    const retryAfter = String(deps.config.event_hook_receiver.retry_after_seconds);
    app.use(async (ctx, next) => {
      if (starting() && (ctx.path.startsWith('/api/') || ctx.path === '/console' || ctx.path.startsWith('/console/'))) {
        ctx.status = 503;
        ctx.set('Retry-After', retryAfter);
        ctx.body = { error: 'starting, retry later' };
        return;
      }
      await next();
    });
  }

  const router = new Router();
  // Hook routes served in front of Koa too (receivers/fast-path.ts), each over the same handler as its Koa route.
  const fast: FastRoute[] = [];
  const fastOptions = { trustProxy: deps.config.server.trust_proxy, log };
  mountHealth(router, deps.probes);
  if (deps.receivers !== false) {
    const eventHooks = createEventHooks({
      hooks: deps.config.event_hooks,
      stream: deps.stream,
      topics: deps.topics,
      bodyLimitBytes: deps.config.server.body_limit_bytes,
      ackTimeoutMs: deps.config.server.ack_timeout_ms,
      limits: deps.config.event_hook_receiver,
      logger: deps.logger,
    });
    mountEventHooks(router, eventHooks);
    fast.push(eventHookFastPath(eventHooks, fastOptions));
  }
  if (deps.tokenHooks) {
    mountTokenHooks(router, deps.tokenHooks);
    fast.push(tokenHookFastPath(deps.tokenHooks, fastOptions));
  }
  if (deps.ssf) mountSsfReceivers(router, { ssf: deps.ssf, stream: deps.stream, topics: deps.topics });
  if (deps.ssfProvider) mountSsfWellKnown(router, deps.ssfProvider);
  if (deps.store) mountQueryApi(router, { api: deps.config.api, store: deps.store, logger: deps.logger });
  if (deps.console) mountConsole(router, deps.console);
  // Prometheus text. For your network only: route just /hooks/* from the internet (labels name hook ids).
  router.get('/metrics', async (ctx) => {
    const { contentType, body } = await renderMetrics();
    ctx.type = contentType;
    ctx.body = body;
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  if (fast.length > 0) {
    // Wrapping `callback` puts the fast paths in front wherever the app is served (listen, callback()).
    const koaCallback = app.callback.bind(app);
    app.callback = () => {
      const koa = koaCallback();
      // hooklog serves HTTP/1.1 only (node:http), so the request is an IncomingMessage.
      return (req, res) => {
        for (const route of fast) if (route(req as IncomingMessage, res as ServerResponse)) return Promise.resolve();
        return koa(req, res);
      };
    };
  }
  return app;
}
