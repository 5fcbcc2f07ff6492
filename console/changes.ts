/**
 * POST /console/api/alerts/changes: one change (acknowledge, close, reopen,
 * assign, comment) to one or many alerts. All or nothing: every alert must
 * exist in an org the principal may see (else 404) and change (else 403), and
 * every transition must be allowed from the alert's current state (else 409);
 * then the records are appended in one atomic append, and the answer waits
 * (bounded) until ClickHouse shows them, so the page that asked reads its own
 * change. The records are the audit trail; each change is also logged.
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
import { changesVisible, orgsOfAlerts } from './alerts.js';
import { apiRoute } from './route.js';
import type { ConsoleContext } from './context.js';
import { badRequest, notFound } from './http.js';

const MAX_BODY_BYTES = 64 * 1024;
const POLL_MS = 100;

const changeSchema = z.strictObject({
  alert_ids: z.array(z.string().min(1).max(128)).min(1).max(500),
  action: z.enum(ACTIONS),
  resolution: z.enum(RESOLUTIONS).optional(),
  assignee: z.string().max(200).optional(),
  note: z.string().max(MAX_NOTE_CHARS).optional(),
});

async function readJson(ctx: Context): Promise<unknown> {
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
      const ids = [...new Set(body.alert_ids)];
      const orgs = await orgsOfAlerts(c.store, ids);
      const p = who.principal;
      // Not there, or of an org this principal may not see: the same 404, for the whole request.
      const hidden = [...orgs.values()].find((org) => !maySeeOrg(p, org));
      if (hidden !== undefined) {
        c.auth.refused(ctx, who, 'other_org', hidden);
        return notFound(ctx);
      }
      if (ids.some((id) => !orgs.has(id))) return notFound(ctx);
      const unchangeable = ids.map((id) => orgs.get(id)!).find((org) => !mayChangeOrg(p, org));
      if (unchangeable !== undefined) {
        c.auth.refused(ctx, who, 'viewer_change', unchangeable);
        ctx.status = 403;
        ctx.body = { error: 'your role (viewer) may not change alerts' };
        return;
      }
      const current = new Map(
        (
          await c.store.query<{ alert_id: string; state_status: string }>(
            currentStateSql(c.store.database, 'alert_id IN {ids:Array(String)}'),
            { ids },
          )
        ).map((r) => [r.alert_id, (r.state_status || 'open') as AlertStatus]),
      );
      const refused = ids
        .map((id) => ({ id, why: refuseTransition(current.get(id) ?? 'open', body) }))
        .filter((r) => r.why !== undefined);
      if (refused.length > 0) {
        ctx.status = 409;
        ctx.body = { error: 'some alerts cannot take this change', refused };
        return;
      }
      const now = c.now();
      const records = ids.map((id) => changeRecord(orgs.get(id)!, id, body, p, String(ctx.state.requestId ?? ''), now));
      await c.stream.appendAtomically([{ topic: c.topic, records: records.map(toStreamRecord) }]);
      c.log.info(
        { actor: p.id, actor_kind: p.kind, action: body.action, alerts: ids.length, orgs: [...new Set(orgs.values())] },
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
