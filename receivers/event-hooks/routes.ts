import type Router from '@koa/router';
import type { Context } from 'koa';
import type { EventHookConfig } from '../../platform/config/schema.js';
import { deadLetter, type Topics } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import type { Logger } from '../../platform/log.js';
import { isTooLarge, readBody } from '../body.js';
import { SecretMatcher } from './auth.js';
import { ORIGIN, parseDelivery } from './delivery.js';

export interface EventHookDeps {
  readonly hooks: readonly EventHookConfig[];
  readonly stream: Stream;
  readonly topics: Topics;
  readonly bodyLimitBytes: number;
  readonly ackTimeoutMs: number;
  readonly logger: Logger;
}

interface Hook {
  readonly config: EventHookConfig;
  readonly matcher: SecretMatcher;
}

const VERIFICATION_HEADER = 'x-okta-verification-challenge';

/**
 * GET answers the one-time verification challenge; POST appends a delivery's
 * events and answers 204 only once the stream holds them durably. Both are
 * authenticated the same way, and every auth failure looks the same (401,
 * generic body) whether the hook id or the secret was wrong.
 */
export function mountEventHooks(router: Router, deps: EventHookDeps): void {
  const hooks = new Map<string, Hook>(deps.hooks.map((h) => [h.id, { config: h, matcher: new SecretMatcher(h.auth.secrets) }]));
  const log = deps.logger.child({ component: 'event-hooks' });

  function authenticate(ctx: Context): Hook | undefined {
    const hook = hooks.get(String(ctx.params.hookId));
    const presented = ctx.get(hook?.config.auth.header ?? 'authorization');
    if (hook && hook.matcher.matches(presented)) return hook;
    log.warn({ hookId: String(ctx.params.hookId).slice(0, 128), requestId: ctx.state.requestId, ip: ctx.ip }, 'event hook authentication failed');
    ctx.status = 401;
    ctx.body = { error: 'unauthorized' };
    return undefined;
  }

  router.get('/hooks/events/:hookId', (ctx) => {
    if (!authenticate(ctx)) return;
    const challenge = ctx.get(VERIFICATION_HEADER);
    if (!challenge) {
      ctx.status = 400;
      ctx.body = { error: `missing ${VERIFICATION_HEADER} header` };
      return;
    }
    ctx.type = 'application/json';
    ctx.body = { verification: challenge };
  });

  router.post('/hooks/events/:hookId', async (ctx) => {
    const hook = authenticate(ctx);
    if (!hook) return;
    if (!ctx.is('application/json')) {
      ctx.status = 415;
      ctx.body = { error: 'content-type must be application/json' };
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(ctx.req, deps.bodyLimitBytes);
    } catch (err) {
      ctx.status = isTooLarge(err) ? 413 : 400;
      ctx.body = { error: isTooLarge(err) ? 'body too large' : 'could not read body' };
      return;
    }
    const { id: hookId, org } = hook.config;
    const parsed = parseDelivery(body, { org, hookId, receivedAt: new Date() });
    if (!parsed.ok) {
      await withDeadline(deps.stream.append(deps.topics.deadletter, [deadLetter(body, parsed.reason, ORIGIN, { 'hooklog-hook-id': hookId }, org)]), deps.ackTimeoutMs);
      ctx.status = 400;
      ctx.body = { error: parsed.reason };
      return;
    }
    const appends = [deps.stream.append(deps.topics.logs, parsed.events)];
    if (parsed.rejected.length > 0) appends.push(deps.stream.append(deps.topics.deadletter, parsed.rejected));
    const durable = await withDeadline(Promise.all(appends), deps.ackTimeoutMs);
    if (durable !== 'ok') {
      // Part of the batch may be durable already; the service's single retry is
      // safe because ClickHouse keeps one row per (org, uuid).
      log.error({ hookId, deliveryId: parsed.deliveryId, requestId: ctx.state.requestId, reason: durable }, 'delivery not acknowledged in time');
      ctx.status = 503;
      ctx.set('Retry-After', '1');
      ctx.body = { error: 'not durable yet, retry' };
      return;
    }
    log.debug({ hookId, deliveryId: parsed.deliveryId, events: parsed.events.length, rejected: parsed.rejected.length }, 'delivery acknowledged');
    ctx.status = 204;
  });
}

/** 'ok' when `work` settled successfully within `ms`, otherwise why not. Never throws. */
export async function withDeadline(work: Promise<unknown>, ms: number): Promise<'ok' | 'timeout' | string> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  try {
    return await Promise.race([work.then(() => 'ok' as const, (err: unknown) => `append failed: ${(err as Error).message}`), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
