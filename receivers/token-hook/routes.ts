/**
 * `POST /hooks/token/:hookId`. Authentication comes first (the body of an
 * unauthenticated request is never read), and every failure of it looks the
 * same — 401, generic body — whether the hook id, the secret or the token was
 * wrong. Whatever goes wrong, an answer goes out: the service gives us 3 s and
 * never retries, and any non-200 makes it issue the original token.
 */
import type Router from '@koa/router';
import { isTooLarge, readBody } from '../body.js';
import { decide, type TokenHooks } from './service.js';

const UNAUTHORIZED = Object.freeze({ error: 'unauthorized' });

export function mountTokenHooks(router: Router, hooks: TokenHooks): void {
  router.post('/hooks/token/:hookId', async (ctx) => {
    const requestId = ctx.state.requestId as string | undefined;
    const hookId = String(ctx.params.hookId);
    const hook = hooks.get(hookId);
    if (!hook) {
      hooks.logger.warn({ hookId: hookId.slice(0, 128), requestId, ip: ctx.ip }, 'token_hook_unknown_hook');
      ctx.status = 401;
      ctx.body = UNAUTHORIZED;
      return;
    }
    const auth = await hook.auth.check((name) => ctx.get(name));
    if (!auth.ok) {
      hook.telemetry.authFailed(auth.reason, requestId, ctx.ip);
      ctx.status = 401;
      ctx.body = UNAUTHORIZED;
      return;
    }
    if (!ctx.is('application/json')) {
      hook.telemetry.badRequest(415, 'content-type is not application/json', requestId);
      ctx.status = 415;
      ctx.body = { error: 'content-type must be application/json' };
      return;
    }
    let raw: Buffer;
    try {
      raw = await readBody(ctx.req, hook.config.max_request_bytes);
    } catch (err) {
      const status = isTooLarge(err) ? 413 : 400;
      hook.telemetry.badRequest(status, isTooLarge(err) ? 'body too large' : 'could not read body', requestId);
      ctx.status = status;
      ctx.body = { error: status === 413 ? 'body too large' : 'could not read body' };
      return;
    }
    const answer = decide(hook, raw, requestId);
    if (answer.status === 400) {
      ctx.status = 400;
      ctx.body = { error: answer.error };
    } else if (answer.status === 204) {
      ctx.status = 204;
    } else {
      ctx.status = 200;
      ctx.type = 'application/json';
      ctx.body = answer.body;
    }
  });
}
