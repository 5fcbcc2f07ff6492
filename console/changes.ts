/**
 * POST /console/api/alerts/changes: one change (acknowledge, close, reopen,
 * assign, comment) to one or many alerts. All or nothing: every alert must
 * exist in an org the principal may see (else 404) and change (else 403), and
 * every transition must be allowed from the alert's current state (else 409);
 * then the records are appended in one atomic append, and the answer waits
 * (bounded) until ClickHouse shows them, so the page that asked reads its own
 * change. The records are the audit trail; each change is also logged.
 *
 * A change by filter ("select all N matching") names the list's filter and
 * snapshot instead of ids: the server reads the alerts it matches in that
 * snapshot, within the principal's orgs, and goes on only if they are the N
 * the analyst confirmed (else 409 with the count now). Then it is the same
 * change, checked and recorded per alert like one made alert by alert.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { mayChangeOrg, maySeeOrg } from '../platform/access.js';
import {
  ACTIONS,
  changeRecord,
  currentStateSql,
  MAX_NOTE_CHARS,
  refuseTransition,
  RESOLUTIONS,
  toStreamRecord,
  type AlertStatus,
} from './alert-states.js';
import { parseListQuery } from './alert-list.js';
import { changesVisible, matchingAlerts, orgsOfAlerts } from './alerts.js';
import { oneOrg, scopeOf } from './scope.js';
import { apiRoute } from './route.js';
import type { ConsoleContext } from './context.js';
import { badRequest, notFound } from './http.js';

const MAX_BODY_BYTES = 64 * 1024;
const POLL_MS = 100;

/** The most alerts one change by filter may change: beyond, narrow the filter. */
export const MAX_BULK = 100_000;
/** A refusal of a change by filter names at most this many alerts (with every reason and its count). */
const MAX_REFUSED_LISTED = 100;
/** The list's parameters a change by filter takes (console/alert-list.ts); `as_of` is its snapshot. */
const FILTER_PARAMS = ['org', 'rule', 'severity', 'status', 'assignee', 'q', 'since', 'until', 'as_of'] as const;

const changeSchema = z
  .strictObject({
    /** These alerts… */
    alert_ids: z.array(z.string().min(1).max(128)).min(1).max(500).optional(),
    /** …or every alert the list's filter matches in its snapshot, confirmed with their count. */
    filter: z.partialRecord(z.enum(FILTER_PARAMS), z.string().max(400)).optional(),
    expected: z.number().int().min(1).max(MAX_BULK).optional(),
    action: z.enum(ACTIONS),
    resolution: z.enum(RESOLUTIONS).optional(),
    assignee: z.string().max(200).optional(),
    note: z.string().max(MAX_NOTE_CHARS).optional(),
  })
  .refine((b) => (b.alert_ids === undefined) !== (b.filter === undefined), {
    message: 'give alert_ids or filter, not both',
  })
  .refine((b) => b.filter === undefined || (b.filter.as_of !== undefined && b.expected !== undefined), {
    message: "a change by filter needs filter.as_of (the list's snapshot) and expected (the count confirmed)",
  });

/** The request's JSON body, bounded (64 KB); throws with the reason it is not one. */
export async function readJson(ctx: Context): Promise<unknown> {
  if (!/^application\/json\b/i.test(ctx.get('content-type'))) throw new Error('send application/json');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error(`the body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export function mountChanges(router: Router, c: ConsoleContext): void {
  router.post(
    '/console/api/alerts/changes',
    apiRoute(c, async (ctx, who) => {
      const refusal = c.auth.refuseChange(ctx, who);
      if (refusal) {
        ctx.status = 403;
        ctx.body = { error: refusal };
        return;
      }
      let body: z.output<typeof changeSchema>;
      try {
        const parsed = changeSchema.safeParse(await readJson(ctx));
        if (!parsed.success)
          return badRequest(ctx, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
        body = parsed.data;
      } catch (err) {
        return badRequest(ctx, `the body is not a change: ${(err as Error).message}`);
      }
      const p = who.principal;
      let ids: string[];
      let orgs: Map<string, string>;
      let current: Map<string, AlertStatus>;
      if (body.filter) {
        // By filter: the alerts of the list's snapshot, read within the principal's orgs only.
        const q: Record<string, string> = { ...body.filter };
        if (q.org && !maySeeOrg(p, q.org)) {
          c.auth.refused(ctx, who, 'other_org', q.org);
          return notFound(ctx);
        }
        const lq = parseListQuery(q, p, q.org ? oneOrg(q.org) : scopeOf(p), c.now());
        const matched = await matchingAlerts(c.store, lq.filter, lq.filter.asOf, MAX_BULK + 1);
        if (matched.length > MAX_BULK)
          return badRequest(
            ctx,
            `the filter matches over ${MAX_BULK} alerts: narrow it (one change takes at most ${MAX_BULK})`,
          );
        if (matched.length !== body.expected) {
          ctx.status = 409;
          ctx.body = {
            error: `the filter now matches ${matched.length} alerts, not the ${body.expected} confirmed: look again and confirm`,
            matched: matched.length,
          };
          return;
        }
        ids = matched.map((m) => m.alert_id);
        orgs = new Map(matched.map((m) => [m.alert_id, m.org]));
        current = new Map(matched.map((m) => [m.alert_id, m.status]));
      } else {
        ids = [...new Set(body.alert_ids)];
        orgs = await orgsOfAlerts(c.store, ids);
        // Not there, or of an org this principal may not see: the same 404, for the whole request.
        const hidden = [...orgs.values()].find((org) => !maySeeOrg(p, org));
        if (hidden !== undefined) {
          c.auth.refused(ctx, who, 'other_org', hidden);
          return notFound(ctx);
        }
        if (ids.some((id) => !orgs.has(id))) return notFound(ctx);
        current = new Map(
          (
            await c.store.query<{ alert_id: string; state_status: string }>(
              currentStateSql(c.store.database, 'alert_id IN {ids:Array(String)}'),
              { ids },
            )
          ).map((r) => [r.alert_id, (r.state_status || 'open') as AlertStatus]),
        );
      }
      const unchangeable = [...new Set(orgs.values())].find((org) => !mayChangeOrg(p, org));
      if (unchangeable !== undefined) {
        c.auth.refused(ctx, who, 'viewer_change', unchangeable);
        ctx.status = 403;
        ctx.body = { error: 'your role (viewer) may not change alerts' };
        return;
      }
      const refused = ids
        .map((id) => ({ id, why: refuseTransition(current.get(id) ?? 'open', body) }))
        .filter((r): r is { id: string; why: string } => r.why !== undefined);
      if (refused.length > 0) {
        // Every reason with how many alerts it refused; the alerts themselves up to a bound.
        const reasons = new Map<string, number>();
        for (const r of refused) reasons.set(r.why, (reasons.get(r.why) ?? 0) + 1);
        ctx.status = 409;
        ctx.body = {
          error: 'some alerts cannot take this change',
          refused: refused.slice(0, MAX_REFUSED_LISTED),
          refused_count: refused.length,
          asked: ids.length,
          reasons: [...reasons].map(([why, n]) => ({ why, n })),
        };
        return;
      }
      const now = c.now();
      const records = ids.map((id) => changeRecord(orgs.get(id)!, id, body, p, String(ctx.state.requestId ?? ''), now));
      await c.stream.appendAtomically([{ topic: c.topic, records: records.map(toStreamRecord) }]);
      c.log.info(
        {
          actor: p.id,
          actor_kind: p.kind,
          action: body.action,
          alerts: ids.length,
          orgs: [...new Set(orgs.values())],
          by_filter: body.filter !== undefined,
        },
        'console_change',
      );
      const deadline = Date.now() + c.config.change_visible_timeout_ms;
      let visible = await changesVisible(
        c.store,
        records.map((r) => r.change_id),
      );
      while (!visible && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, POLL_MS));
        visible = await changesVisible(
          c.store,
          records.map((r) => r.change_id),
        );
      }
      ctx.status = visible ? 200 : 202;
      ctx.body = { changed: ids.length, visible, change_ids: records.map((r) => r.change_id) };
    }),
  );
}
