import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Logger } from '../../platform/log.js';
import type { Topics } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import { SecretMatcher } from '../../platform/secret-matcher.js';
import { expectedSourceOf, type EventHookConfig, type EventHookReceiverConfig } from './config.js';
import { DeliveryReceiver, type ResolvedHook } from './receive.js';
import { createEventHookTelemetry, type RequestFacts } from './telemetry.js';

export interface EventHookDeps {
  readonly hooks: readonly EventHookConfig[];
  readonly stream: Stream;
  readonly topics: Topics;
  readonly bodyLimitBytes: number;
  readonly ackTimeoutMs: number;
  readonly limits: EventHookReceiverConfig;
  readonly logger: Logger;
}

interface Hook extends ResolvedHook {
  readonly matcher: SecretMatcher;
}

export const VERIFICATION_HEADER = 'x-okta-verification-challenge';

/**
 * GET answers the one-time verification challenge; POST hands a delivery to
 * the DeliveryReceiver (receive.ts). Both are authenticated the same way, and
 * every auth failure looks the same (401, one generic body) whether the hook id
 * or the secret was wrong, and nothing of an unauthenticated request is read
 * beyond its headers or stored.
 */
export function mountEventHooks(router: Router, deps: EventHookDeps): void {
  const hooks = new Map<string, Hook>(
    deps.hooks.map((h) => [
      h.id,
      {
        config: h,
        matcher: new SecretMatcher(h.auth.secrets),
        expectedSource: h.expected_source ? expectedSourceOf(h.expected_source) : undefined,
      },
    ]),
  );
  const telemetry = createEventHookTelemetry(deps.logger);
  const receiver = new DeliveryReceiver({
    stream: deps.stream,
    topics: deps.topics,
    bodyLimitBytes: deps.bodyLimitBytes,
    ackTimeoutMs: deps.ackTimeoutMs,
    limits: deps.limits,
    telemetry,
  });

  function authenticate(ctx: Context): { hook: Hook; facts: RequestFacts } | undefined {
    // Map.get with an attacker's string is safe: no prototype lookup, unlike a plain object.
    const hook = hooks.get(String(ctx.params.hookId));
    const facts: RequestFacts = {
      hook: hook?.config.id ?? 'unknown',
      requestId: String(ctx.state.requestId),
      method: ctx.method,
    };
    // An unknown hook still costs a hash and a comparison, so timing does not tell it from a wrong secret.
    const matcher = hook?.matcher ?? UNKNOWN_HOOK;
    const presented = ctx.get(hook?.config.auth.header ?? 'authorization');
    const which = matcher.matchIndex(presented);
    if (which >= 0 && hook) {
      telemetry.secretMatched(facts, which);
      return { hook, facts };
    }
    telemetry.authFailed(facts, ctx.ip);
    ctx.status = 401;
    ctx.body = { error: 'unauthorized' };
    return undefined;
  }

  router.get('/hooks/events/:hookId', (ctx) => {
    const auth = authenticate(ctx);
    if (!auth) return;
    const challenge = ctx.get(VERIFICATION_HEADER);
    if (!challenge) {
      telemetry.rejected(auth.facts, 'bad-challenge', 400);
      ctx.status = 400;
      ctx.body = { error: `missing or empty ${VERIFICATION_HEADER} header` };
      return;
    }
    telemetry.verified(auth.facts);
    ctx.type = 'application/json';
    ctx.body = { verification: challenge };
  });

  router.post('/hooks/events/:hookId', async (ctx) => {
    const auth = authenticate(ctx);
    if (!auth) return;
    await receiver.handle(ctx, auth.hook, auth.facts);
  });
}

/** Matches nothing: a random secret nobody was given. */
const UNKNOWN_HOOK = new SecretMatcher([crypto.randomUUID() + crypto.randomUUID()]);
