/**
 * `GET` and `POST /hooks/events/:hookId`. GET answers the one-time
 * verification challenge; POST hands a delivery to the DeliveryReceiver
 * (receive.ts). Both are authenticated the same way, and every auth failure
 * looks the same (401, one generic body) whether the hook id or the secret was
 * wrong, and nothing of an unauthenticated request is read beyond its headers
 * or stored.
 *
 * Served twice over the same `answer`, as the token hook is (../fast-path.ts):
 * by `eventHookFastPath`, which `createApp` puts in front of Koa, and as Koa
 * routes for what the fast path leaves to Koa (HEAD, odd URLs).
 */
import type Router from '@koa/router';
import type { RouterContext } from '@koa/router';
import type { Logger } from '../../platform/log.js';
import type { Topics } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import { SecretMatcher } from '../../platform/secret-matcher.js';
import {
  fastRoute,
  replyThroughKoa,
  requestHeader,
  type FastPathOptions,
  type FastRoute,
  type HookRequest,
  type Reply,
} from '../fast-path.js';
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

/** The configured event hooks, ready to answer their requests. */
export interface EventHooks {
  answer(r: HookRequest): Promise<Reply>;
}

interface Hook extends ResolvedHook {
  readonly matcher: SecretMatcher;
}

export const VERIFICATION_HEADER = 'x-okta-verification-challenge';

const UNAUTHORIZED: Reply = Object.freeze({ status: 401, body: '{"error":"unauthorized"}' });
const NO_CHALLENGE: Reply = Object.freeze({
  status: 400,
  body: JSON.stringify({ error: `missing or empty ${VERIFICATION_HEADER} header` }),
});

export function createEventHooks(deps: EventHookDeps): EventHooks {
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

  return {
    async answer(r) {
      // Map.get with an attacker's string is safe: no prototype lookup, unlike a plain object.
      const hook = hooks.get(r.hookId);
      const facts: RequestFacts = { hook: hook?.config.id ?? 'unknown', requestId: r.requestId, method: r.req.method! };
      // An unknown hook still costs a comparison, so timing does not tell it from a wrong secret.
      const matcher = hook?.matcher ?? UNKNOWN_HOOK;
      const which = matcher.matchIndex(requestHeader(r.req, hook?.config.auth.header ?? 'authorization'));
      if (which < 0 || !hook) {
        telemetry.authFailed(facts, r.ip());
        return UNAUTHORIZED;
      }
      telemetry.secretMatched(facts, which);
      if (r.req.method === 'POST') return receiver.handle(r.req, hook, facts);
      const challenge = requestHeader(r.req, VERIFICATION_HEADER);
      if (!challenge) {
        telemetry.rejected(facts, 'bad-challenge', 400);
        return NO_CHALLENGE;
      }
      telemetry.verified(facts);
      return { status: 200, body: JSON.stringify({ verification: challenge }) };
    },
  };
}

export function mountEventHooks(router: Router, hooks: EventHooks): void {
  const serve = async (ctx: RouterContext) =>
    replyThroughKoa(
      ctx,
      await hooks.answer({
        req: ctx.req,
        hookId: String(ctx.params.hookId),
        requestId: String(ctx.state.requestId),
        ip: () => ctx.ip,
      }),
    );
  router.get('/hooks/events/:hookId', serve);
  router.post('/hooks/events/:hookId', serve);
}

/** GET and POST /hooks/events/:hookId straight on node:http; anything else is left to Koa. */
export function eventHookFastPath(hooks: EventHooks, opts: FastPathOptions): FastRoute {
  return fastRoute('/hooks/events/', ['GET', 'POST'], opts, (r) => hooks.answer(r));
}

/** Matches nothing: a random secret nobody was given. */
const UNKNOWN_HOOK = new SecretMatcher([crypto.randomUUID() + crypto.randomUUID()]);
