/** Every JSON route of the console goes through `apiRoute`: authentication first, then one way of failing. */
import type { Context } from 'koa';
import { HooklogError } from '../platform/errors.js';
import type { Authenticated } from './auth.js';
import type { ConsoleContext } from './context.js';
import { badRequest, securityHeaders, singleParams } from './http.js';
import { ParamError } from './range.js';

export type Handler = (ctx: Context, who: Authenticated, q: Record<string, string>) => Promise<void>;

/** Authenticates (session or key), sets the headers, parses the query once, and turns errors into answers. */
export function apiRoute(c: ConsoleContext, handler: Handler) {
  return async (ctx: Context): Promise<void> => {
    const started = performance.now();
    securityHeaders(ctx, 'no-store');
    try {
      const who = await c.auth.principalOf(ctx, true);
      if (!who) {
        ctx.status = 401;
        ctx.body = { error: 'sign in at /console/auth/login, or send Authorization: Bearer <API key>' };
        return;
      }
      const q = singleParams(ctx);
      if (!q) return badRequest(ctx, 'give each parameter once');
      await handler(ctx, who, q);
      // The server's own time for the answer (bench/console reads it; browsers show it in their tools).
      ctx.set('server-timing', `app;dur=${(performance.now() - started).toFixed(1)}`);
    } catch (err) {
      if (err instanceof ParamError) return badRequest(ctx, err.message, err.param);
      const param = (err as { param?: unknown }).param;
      if (err instanceof HooklogError && err.code === 'QUERY_INVALID')
        return badRequest(ctx, err.message, typeof param === 'string' ? param : undefined);
      const code = err instanceof HooklogError ? err.code : 'INTERNAL';
      c.log.warn({ path: ctx.path, code, err }, 'console_api_failed');
      ctx.status = err instanceof HooklogError && err.retriable ? 503 : 500;
      ctx.body = { error: `the request failed (${code})`, requestId: ctx.state.requestId };
    }
  };
}
