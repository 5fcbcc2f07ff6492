/**
 * `POST /hooks/token/:hookId`. Authentication comes first (the body of an
 * unauthenticated request is never read), and every failure of it looks the
 * same — 401, generic body — whether the hook id, the secret or the token was
 * wrong. Whatever goes wrong, an answer goes out: the service gives us 3 s and
 * never retries, and any non-200 makes it issue the original token.
 *
 * The route is served twice over the same `answerTokenRequest`: as a Koa route
 * (for completeness: odd URLs the fast path leaves to Koa), and by
 * `tokenHookFastPath`, which `createApp` puts in front of Koa (../fast-path.ts).
 * The answer path is a few tens of microseconds of work; Koa's context,
 * middleware chain, router and response handling cost more than that on every
 * sign-in.
 */
import type Router from '@koa/router';
import { isTooLarge, readBody } from '../body.js';
import {
  fastRoute,
  isJsonRequest,
  replyThroughKoa,
  requestHeader,
  type FastPathOptions,
  type FastRoute,
  type HookRequest,
  type Reply,
} from '../fast-path.js';
import { decide, type TokenHooks } from './service.js';

const UNAUTHORIZED: Reply = Object.freeze({ status: 401, body: '{"error":"unauthorized"}' });
const UNSUPPORTED_TYPE: Reply = Object.freeze({
  status: 415,
  body: '{"error":"content-type must be application/json"}',
});
const TOO_LARGE: Reply = Object.freeze({ status: 413, body: '{"error":"body too large"}' });
const UNREADABLE: Reply = Object.freeze({ status: 400, body: '{"error":"could not read body"}' });
const NO_CONTENT: Reply = Object.freeze({ status: 204 });

export async function answerTokenRequest(hooks: TokenHooks, r: HookRequest): Promise<Reply> {
  const hook = hooks.get(r.hookId);
  if (!hook) {
    hooks.logger.warn(
      { hookId: r.hookId.slice(0, 128), requestId: r.requestId, ip: r.ip() },
      'token_hook_unknown_hook',
    );
    return UNAUTHORIZED;
  }
  const checked = hook.auth.check((name) => requestHeader(r.req, name));
  const auth = checked instanceof Promise ? await checked : checked; // a secret's check is synchronous
  if (!auth.ok) {
    hook.telemetry.authFailed(auth.reason, r.requestId, r.ip());
    return UNAUTHORIZED;
  }
  if (!isJsonRequest(r.req)) {
    hook.telemetry.badRequest(415, 'content-type is not application/json', r.requestId);
    return UNSUPPORTED_TYPE;
  }
  let raw: Buffer;
  try {
    raw = await readBody(r.req, hook.config.max_request_bytes);
  } catch (err) {
    const tooLarge = isTooLarge(err);
    hook.telemetry.badRequest(tooLarge ? 413 : 400, tooLarge ? 'body too large' : 'could not read body', r.requestId);
    return tooLarge ? TOO_LARGE : UNREADABLE;
  }
  const answer = decide(hook, raw, r.requestId);
  if (answer.status === 400) return { status: 400, body: JSON.stringify({ error: answer.error }) };
  if (answer.status === 204) return NO_CONTENT;
  return answer;
}

export function mountTokenHooks(router: Router, hooks: TokenHooks): void {
  router.post('/hooks/token/:hookId', async (ctx) =>
    replyThroughKoa(
      ctx,
      await answerTokenRequest(hooks, {
        req: ctx.req,
        hookId: String(ctx.params.hookId),
        requestId: String(ctx.state.requestId),
        ip: () => ctx.ip,
      }),
    ),
  );
}

/** POST /hooks/token/:hookId straight on node:http; anything else is left to Koa. */
export function tokenHookFastPath(hooks: TokenHooks, opts: FastPathOptions): FastRoute {
  return fastRoute('/hooks/token/', ['POST'], opts, (r) => answerTokenRequest(hooks, r));
}
