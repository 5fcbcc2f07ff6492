/**
 * /console/api/saved-searches: an org's saved searches, listed and opened by whoever may see the org, saved,
 * renamed, overwritten and deleted by its analysts. Access is decided as on every route (platform/access.ts):
 * another org's saved search is 404, by list, by id (a guessed one too) and by every change; `org=*` lists
 * every org only for a principal that sees every org. A change is a record on `<prefix>.saved-searches`
 * (saved-searches.ts); the answer waits (bounded) until the store shows it, as a triage change does, so the
 * page that saved reads its own save on any instance.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { EVERY_ORG, mayChangeOrg, mayReadOrgs, maySeeOrg } from '../platform/access.js';
import { randomUUID } from 'node:crypto';
import type { Authenticated } from './auth.js';
import { readJson } from './changes.js';
import type { ConsoleContext } from './context.js';
import { badRequest, notFound } from './http.js';
import { apiRoute, type Handler } from './route.js';
import {
  listSaved,
  savedByName,
  savedById,
  savedChangesVisible,
  savedHistory,
  savedRecord,
  savedStateSchema,
  toStreamRecord,
  type SavedAction,
  type SavedSearch,
  type SavedState,
} from './saved-searches.js';
import { oneOrg, scopeOf } from './scope.js';

const POLL_MS = 100;
/** Ids are the server's (UUIDs): anything else is not one, and answers as a missing one does. */
const ID = /^[0-9a-f-]{36}$/;

const saveSchema = savedStateSchema.extend({
  org: z.string().min(1).max(200),
  /** Replace the org's saved search of this name instead of refusing the name (409). */
  overwrite: z.boolean().optional(),
});
const updateSchema = savedStateSchema.partial().refine((b) => Object.keys(b).length > 0, 'change something');

const issues = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');

export function mountSavedSearches(router: Router, c: ConsoleContext): void {
  const route = (method: 'get' | 'post' | 'delete', path: string, h: Handler) => router[method](path, apiRoute(c, h));
  /** May `who` see `org`? If not, the refusal is recorded (other_org) and the caller answers 404. */
  const sees = (ctx: Context, who: Authenticated, org: string): boolean => {
    if (maySeeOrg(who.principal, org)) return true;
    c.auth.refused(ctx, who, 'other_org', org);
    return false;
  };
  /** The URL's saved search if `who` may see it; otherwise undefined (the caller answers 404). */
  const savedOf = async (ctx: Context, who: Authenticated): Promise<SavedSearch | undefined> => {
    const id = ctx.params.id ?? '';
    if (!ID.test(id)) return undefined;
    const s = await savedById(c.store, id);
    return s && sees(ctx, who, s.org) ? s : undefined;
  };
  /** The refusal of a change to `org` (CSRF, a viewer), answered; true when refused. */
  const refuseChange = (ctx: Context, who: Authenticated, org: string): boolean => {
    const csrf = c.auth.refuseChange(ctx, who);
    if (csrf) {
      ctx.status = 403;
      ctx.body = { error: csrf };
      return true;
    }
    if (mayChangeOrg(who.principal, org)) return false;
    c.auth.refused(ctx, who, 'viewer_change', org);
    ctx.status = 403;
    ctx.body = { error: 'your role (viewer) may not save searches' };
    return true;
  };
  /** The body, parsed by `schema`, or undefined once a 400 is answered. */
  const body = async <T extends z.ZodType>(ctx: Context, schema: T): Promise<z.output<T> | undefined> => {
    let raw: unknown;
    try {
      raw = await readJson(ctx);
    } catch (err) {
      badRequest(ctx, `the body is not a saved search: ${(err as Error).message}`);
      return undefined;
    }
    const parsed = schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    badRequest(ctx, issues(parsed.error));
    return undefined;
  };
  /** Appends the change, logs it, and answers once the store shows it (200), or when the wait is over (202). */
  const record = async (
    ctx: Context,
    who: Authenticated,
    org: string,
    id: string,
    action: SavedAction,
    state: SavedState,
  ) => {
    const p = who.principal;
    const r = savedRecord(org, id, action, state, p, String(ctx.state.requestId ?? ''), c.now());
    await c.stream.append(c.savedSearchesTopic, [toStreamRecord(r)]);
    c.log.info({ actor: p.id, actor_kind: p.kind, action, org, search_id: id }, 'console_saved_search');
    const deadline = Date.now() + c.config.change_visible_timeout_ms;
    let visible = await savedChangesVisible(c.store, [r.change_id]);
    while (!visible && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, POLL_MS));
      visible = await savedChangesVisible(c.store, [r.change_id]);
    }
    ctx.status = visible ? 200 : 202;
    ctx.body = { id, org, action, visible, change_id: r.change_id };
  };

  route('get', '/console/api/saved-searches', async (ctx, who, q) => {
    const org = q.org ?? '';
    if (org === EVERY_ORG) {
      if (!mayReadOrgs(who.principal, org)) {
        c.auth.refused(ctx, who, 'other_org', org);
        return notFound(ctx);
      }
    } else if (org !== '' && !sees(ctx, who, org)) return notFound(ctx);
    const scope = org === '' || org === EVERY_ORG ? scopeOf(who.principal) : oneOrg(org);
    ctx.body = { saved: await listSaved(c.store, scope) };
  });

  route('get', '/console/api/saved-searches/:id', async (ctx, who) => {
    const s = await savedOf(ctx, who);
    if (!s) return notFound(ctx);
    ctx.body = { saved: s, history: await savedHistory(c.store, s.org, s.id) };
  });

  route('post', '/console/api/saved-searches', async (ctx, who) => {
    const b = await body(ctx, saveSchema);
    if (!b) return;
    const { org, overwrite, ...state } = b;
    if (!sees(ctx, who, org)) return notFound(ctx);
    if (refuseChange(ctx, who, org)) return;
    const same = await savedByName(c.store, org, state.name);
    if (same && !overwrite) {
      ctx.status = 409;
      ctx.body = {
        error: 'this org has a saved search of that name: overwrite it, or choose another name',
        id: same.id,
      };
      return;
    }
    await record(ctx, who, org, same?.id ?? randomUUID(), 'save', state);
  });

  route('post', '/console/api/saved-searches/:id', async (ctx, who) => {
    const s = await savedOf(ctx, who);
    if (!s) return notFound(ctx);
    if (refuseChange(ctx, who, s.org)) return;
    const b = await body(ctx, updateSchema);
    if (!b) return;
    const state: SavedState = {
      name: b.name ?? s.name,
      filter: b.filter ?? s.filter,
      range: b.range ?? s.range,
      fields: b.fields ?? s.fields,
      facets: b.facets ?? s.facets,
    };
    if (state.name !== s.name) {
      const same = await savedByName(c.store, s.org, state.name);
      if (same) {
        ctx.status = 409;
        ctx.body = { error: 'this org has a saved search of that name: choose another name', id: same.id };
        return;
      }
    }
    const onlyName = Object.keys(b).every((k) => k === 'name');
    await record(ctx, who, s.org, s.id, onlyName ? 'rename' : 'save', state);
  });

  route('delete', '/console/api/saved-searches/:id', async (ctx, who) => {
    const s = await savedOf(ctx, who);
    if (!s) return notFound(ctx);
    if (refuseChange(ctx, who, s.org)) return;
    const { name, filter, range, fields, facets } = s;
    await record(ctx, who, s.org, s.id, 'delete', { name, filter, range, fields, facets });
  });
}
