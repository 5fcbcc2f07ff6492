/**
 * The audit of refusals: every console or console API request refused for who
 * is asking (another org's anything, a viewer's change, a change without its
 * CSRF token or from another origin, a revoked session, a grant the identity
 * service no longer gives) is logged once, with the principal, the route and
 * the reason, and counted by reason. Never a cookie, token or key: the
 * principal is its id and name, and values from the request are bounded.
 */
import type { Context } from 'koa';
import type { Principal } from '../platform/access.js';
import type { Logger } from '../platform/log.js';
import { counter } from '../platform/metrics.js';

export const REFUSAL_REASONS = ['other_org', 'viewer_change', 'csrf', 'revoked_session', 'grant_removed'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

const refusals = counter({
  name: 'hooklog_console_refusals_total',
  help: 'Console and console API requests refused for who asked, by reason: other_org (answered 404), viewer_change, csrf (token or origin), revoked_session, grant_removed.',
  labelNames: ['reason'] as const,
});
for (const reason of REFUSAL_REASONS) refusals.inc({ reason }, 0);

const MAX_SHOWN = 200;
const bounded = (v: string): string => (v.length > MAX_SHOWN ? `${v.slice(0, MAX_SHOWN)}… (${v.length} chars)` : v);

/** The route as declared (`/console/api/users/:org/:user`), else the bounded path. */
function routeOf(ctx: Context): string {
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched : bounded(ctx.path);
}

/** Logs and counts one refusal; `org` is the org asked for, when the refusal is about one. */
export function recordRefusal(
  log: Logger,
  ctx: Context,
  who: Principal | undefined,
  reason: RefusalReason,
  detail: { org?: string; why?: string } = {},
): void {
  refusals.inc({ reason });
  log.warn(
    {
      reason,
      principal: who ? { kind: who.kind, id: bounded(who.id), name: bounded(who.name), role: who.role } : null,
      method: ctx.method,
      route: routeOf(ctx),
      path: bounded(ctx.path),
      ...(detail.org !== undefined ? { org: bounded(detail.org) } : {}),
      ...(detail.why ? { why: detail.why } : {}),
      ip: ctx.ip,
      request_id: ctx.state.requestId ?? null,
    },
    'console_refused',
  );
}
