/**
 * The audit of refusals, shared by every surface that decides who may ask
 * (the console and its API, the query API): a request refused for who is
 * asking is logged once, with the principal, the route and the reason, and
 * counted by reason. Never a cookie, token or key: the principal is its id and
 * name (an API key's configured name, not the key), and values from the
 * request are bounded. Each surface declares its own counter and log event,
 * with its own closed list of reasons.
 */
import type { Context } from 'koa';
import type { Principal } from './access.js';
import type { Logger } from './log.js';
import { counter } from './metrics.js';

/** What one refusal may add: the org asked for, and why (hooklog's words, never the request's secret). */
export interface RefusalDetail {
  readonly org?: string;
  readonly why?: string;
}

/** Logs and counts one refusal of `ctx`'s request; `who` is undefined when no principal was established. */
export type RecordRefusal<R extends string> = (
  log: Logger,
  ctx: Context,
  who: Principal | undefined,
  reason: R,
  detail?: RefusalDetail,
) => void;

const MAX_SHOWN = 200;
const bounded = (v: string): string => (v.length > MAX_SHOWN ? `${v.slice(0, MAX_SHOWN)}… (${v.length} chars)` : v);

/** The route as declared (`/console/api/users/:org/:user`), else the bounded path. */
function routeOf(ctx: Context): string {
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched : bounded(ctx.path);
}

/**
 * One surface's audit: its counter `metric{reason}` (every reason at 0 from the
 * start, so a rate over it exists before the first refusal) and its log event.
 */
export function refusalAudit<R extends string>(surface: {
  readonly metric: string;
  readonly help: string;
  readonly reasons: readonly R[];
  readonly event: string;
}): RecordRefusal<R> {
  const refusals = counter({ name: surface.metric, help: surface.help, labelNames: ['reason'] as const });
  for (const reason of surface.reasons) refusals.inc({ reason }, 0);
  return (log, ctx, who, reason, detail = {}) => {
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
      surface.event,
    );
  };
}
