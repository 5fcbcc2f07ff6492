/**
 * The console's JSON API (/console/api/…), read by its pages and usable with
 * an API key. Every route authenticates, then narrows to the orgs the
 * principal may see (platform/access.ts) before reading: a route naming
 * another org, or an object of one, answers 404.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { maySeeOrg, visibleOrgs } from '../platform/access.js';
import { encodePage, parseListQuery } from './alert-list.js';
import {
  alertAssignees,
  alertEvents,
  alertFacets,
  alertHistory,
  countAlerts,
  getAlert,
  listAlerts,
  orgsOfAlerts,
  type AlertRow,
  type SortKey,
} from './alerts.js';
import type { Authenticated } from './auth.js';
import { toCsv } from './csv.js';
import type { ConsoleContext, SearchQuery } from './context.js';
import { identityFacts, ipFigures, resolveRef, userFigures } from './entities.js';
import { findEvents, rawEvent, riskChanges, unknownFilter } from './events.js';
import { badRequest, notFound } from './http.js';
import { apiRoute, type Handler } from './route.js';
import { parseRange, ParamError } from './range.js';
import { oneOrg, orgCondition, scopeOf } from './scope.js';
import { alertTimeline, parseWindow } from './timeline.js';

const limitOf = (q: Record<string, string>, max: number, dflt: number): number => {
  const n = q.limit === undefined ? dflt : Number(q.limit);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new ParamError('limit', `must be a whole number from 1 to ${max}`);
  return n;
};

/** The fields whose top values the Search page shows when the URL names none. */
const SEARCH_FACETS = ['eventType', 'actor.alternateId', 'client.ipAddress', 'outcome.result'];

/** The URL's search: `fields` and `facets` comma-separated; the engine checks each (and who may read the org). */
function searchOf(q: Record<string, string>, now: number, histogram: boolean, limit: number): SearchQuery {
  const range = parseRange(q, now, 1);
  const list = (s: string | undefined) => (s ? s.split(',').filter((x) => x !== '') : undefined);
  const fields = list(q.fields);
  const facets = list(q.facets) ?? SEARCH_FACETS;
  return {
    filter: q.filter ?? '',
    org: q.org ?? '',
    since: range.sinceMs,
    until: range.untilMs,
    ...(fields ? { fields } : {}),
    ...(histogram ? { facets, histogram: true } : {}),
    limit: limitOf(q, 1000, limit),
    ...(q.after ? { after: q.after } : {}),
  };
}

/**
 * What the Search page asks for its URL's parameters (`org`, `filter`, `since`, `until`, …): its first 50 rows,
 * the histogram and the facets, in one request (bench/search measures exactly this).
 */
export const pageSearch = (q: Record<string, string>, now: number): SearchQuery => searchOf(q, now, true, 50);

export function mountApi(router: Router, c: ConsoleContext): void {
  const get = (path: string, h: Handler) => router.get(path, apiRoute(c, h));
  /** May `who` see `org`? If not, the refusal is recorded (other_org) and the caller answers 404. */
  const sees = (ctx: Context, who: Authenticated, org: string): boolean => {
    if (maySeeOrg(who.principal, org)) return true;
    c.auth.refused(ctx, who, 'other_org', org);
    return false;
  };

  get('/console/api/me', async (ctx, who) => {
    const p = who.principal;
    ctx.body = {
      id: p.id,
      name: p.name,
      kind: p.kind,
      role: p.role,
      orgs: p.orgs === 'all' ? visibleOrgs(p, c.knownOrgs) : p.orgs,
      csrf: who.session ? c.auth.sessions.csrfToken(who.session) : null,
      expires_at: who.session ? new Date(who.session.expiresAt * 1000).toISOString() : null,
    };
  });

  get('/console/api/alerts', async (ctx, who, q) => {
    if (q.org && !sees(ctx, who, q.org)) return notFound(ctx);
    const scope = q.org ? oneOrg(q.org) : scopeOf(who.principal);
    const now = c.now();
    const lq = parseListQuery(q, who.principal, scope, now);
    const f = lq.filter;
    // One row more than the page, in the direction of travel: whether there is a page beyond it.
    const [fetched, counts, facets, assignees] = await Promise.all([
      listAlerts(c.store, { ...f, limit: f.limit + 1 }),
      countAlerts(c.store, f, f.asOf, { until: lq.liveUntil, snapshotUntilMs: lq.snapshotUntilMs }),
      alertFacets(c.store, scope),
      alertAssignees(c.store, scope),
    ]);
    const backwards = f.before !== undefined;
    const more = fetched.length > f.limit;
    const rows = more ? (backwards ? fetched.slice(1) : fetched.slice(0, f.limit)) : fetched;
    // Walking back to the head of the list: the first page, whatever the offset said.
    const offset = backwards && !more ? 0 : lq.offset;
    const token = (o: number, k?: SortKey, b?: boolean) =>
      encodePage({
        v: 1,
        a: f.asOf,
        s: f.sort.by,
        d: f.sort.desc,
        o,
        ...(k ? { k: [k[0], k[1]] as [number, string] } : {}),
        ...(b ? { b } : {}),
      });
    const keyOf = (r: AlertRow): SortKey => [Number(r.sort_value), r.alert_id];
    const first = rows[0];
    const last = rows.at(-1);
    const hasNext = backwards ? last !== undefined : more;
    const hasPrev = offset > 0 && first !== undefined;
    const rules: Record<string, { group_by: unknown }> = {};
    for (const r of rows)
      if (!(r.rule_id in rules)) rules[r.rule_id] = { group_by: c.rules(r.rule_id)?.group_by ?? null };
    ctx.body = {
      alerts: rows,
      total: counts.total,
      counts: counts.byStatus,
      newer: counts.newer,
      as_of: new Date(f.asOf).toISOString(),
      offset,
      page: {
        first: token(0),
        next: hasNext && last ? token(offset + rows.length, keyOf(last)) : null,
        prev: hasPrev && first ? token(Math.max(0, offset - f.limit), keyOf(first), true) : null,
      },
      facets,
      assignees,
      rules,
    };
  });

  /** The URL's alert if `who` may see it; otherwise undefined (the caller answers 404). */
  const alertOf = async (ctx: Context, who: Authenticated): Promise<AlertRow | undefined> => {
    const id = ctx.params.id ?? '';
    const alert = await getAlert(c.store, id, scopeOf(who.principal));
    if (!alert) {
      // Outside the principal's scope: another org's alert is a refusal to record, a missing one is not.
      const org = (await orgsOfAlerts(c.store, [id])).get(id);
      if (org !== undefined) sees(ctx, who, org);
      return undefined;
    }
    return sees(ctx, who, alert.org) ? alert : undefined;
  };

  get('/console/api/alerts/:id', async (ctx, who) => {
    const alert = await alertOf(ctx, who);
    if (!alert) return notFound(ctx);
    const [events, history] = await Promise.all([
      alertEvents(c.store, alert),
      alertHistory(c.store, alert.org, alert.alert_id),
    ]);
    ctx.body = { alert, events, history, rule: c.rules(alert.rule_id) ?? null };
  });

  /** What the alert's users and IPs did around it (`window`: minutes each side, default 60), by session. */
  get('/console/api/alerts/:id/timeline', async (ctx, who, q) => {
    const windowMinutes = parseWindow(q.window);
    const alert = await alertOf(ctx, who);
    if (!alert) return notFound(ctx);
    ctx.body = await alertTimeline(c.store, alert, await alertEvents(c.store, alert), windowMinutes);
  });

  get('/console/api/users/:org/:user', async (ctx, who, q) => {
    const org = ctx.params.org ?? '';
    if (!sees(ctx, who, org)) return notFound(ctx);
    const user = ctx.params.user ?? '';
    const range = parseRange(q, c.now(), 7);
    // A reference (a login too long for a URL) is resolved for the heading and for risk; the rest match by it.
    const resolving = resolveRef(c.store, 'actor_alternate_id', user, 'org = {org:String}', { org });
    const [resolved, risk, identity, figures, alerts] = await Promise.all([
      resolving,
      resolving.then((login) => riskChanges(c.store, org, login ?? user)),
      resolving.then((login) => identityFacts(c.store, org, login ?? user)),
      userFigures(c.store, org, user, range),
      listAlerts(c.store, {
        scope: oneOrg(org),
        since: range.since,
        until: range.until,
        limit: 100,
        groupKeyHas: user,
      }),
    ]);
    ctx.body = {
      org,
      user: resolved ?? user,
      since: range.since,
      until: range.until,
      ...figures,
      alerts,
      risk: risk ?? null,
      identity,
    };
  });

  get('/console/api/ips/:ip', async (ctx, who, q) => {
    if (q.org && !sees(ctx, who, q.org)) return notFound(ctx);
    const range = parseRange(q, c.now(), 7);
    const scope = q.org ? oneOrg(q.org) : scopeOf(who.principal);
    const ip = ctx.params.ip ?? '';
    const [resolved, figures] = await Promise.all([
      resolveRef(c.store, 'client_ip', ip, orgCondition('org', scope), { orgs: [...scope.orgs] }),
      ipFigures(c.store, scope, ip, range),
    ]);
    ctx.body = { ip: resolved ?? ip, since: range.since, until: range.until, ...figures };
  });

  get('/console/api/events', async (ctx, who, q) => {
    const { org, since, until, limit, ...filters } = q;
    if (!org || !sees(ctx, who, org)) return notFound(ctx);
    const unknown = unknownFilter(Object.keys(filters));
    if (unknown) return badRequest(ctx, `unknown filter "${unknown.slice(0, 40)}"`, unknown);
    const range = parseRange({ since, until }, c.now(), 7);
    ctx.body = {
      events: await findEvents(c.store, {
        scope: oneOrg(org),
        range,
        filters,
        limit: limitOf({ ...(limit ? { limit } : {}) }, 1000, 200),
      }),
    };
  });

  get('/console/api/events/:org/:uuid', async (ctx, who) => {
    const org = ctx.params.org ?? '';
    if (!sees(ctx, who, org)) return notFound(ctx);
    const raw = await rawEvent(c.store, org, ctx.params.uuid ?? '');
    if (raw === undefined) return notFound(ctx);
    ctx.body = { org, uuid: ctx.params.uuid, raw };
  });

  /** Runs it; an org the principal may not read is recorded and answers 404, as everywhere. */
  const runSearch = async (ctx: Context, who: Authenticated, sq: SearchQuery) => {
    try {
      return await c.search(who.principal, sq);
    } catch (err) {
      if ((err as { notFound?: unknown }).notFound !== true) throw err;
      c.auth.refused(ctx, who, 'other_org', sq.org);
      return undefined;
    }
  };
  get('/console/api/search', async (ctx, who, q) => {
    const result = await runSearch(ctx, who, pageSearch(q, c.now()));
    if (!result) return notFound(ctx);
    ctx.body = result;
  });
  get('/console/api/search/csv', async (ctx, who, q) => {
    const result = await runSearch(ctx, who, searchOf(q, c.now(), false, 1000));
    if (!result) return notFound(ctx);
    ctx.type = 'text/csv; charset=utf-8';
    ctx.set('content-disposition', 'attachment; filename="search.csv"');
    ctx.body = toCsv(result.columns, result.rows);
  });

  get('/console/api/queries', async (ctx) => {
    ctx.body = { queries: c.queries.list() };
  });

  const runQuery = async (ctx: Context, who: Authenticated, q: Record<string, string>) => {
    const name = ctx.params.name ?? '';
    if (!c.queries.list().some((d) => d.name === name)) return undefined;
    // The org is a parameter like the others: another org's is refused before the query runs.
    if (!q.org || !sees(ctx, who, q.org)) return undefined;
    return { name, result: await c.queries.run(name, q) };
  };
  get('/console/api/queries/:name', async (ctx, who, q) => {
    const ran = await runQuery(ctx, who, q);
    if (!ran) return notFound(ctx);
    ctx.body = { query: ran.name, columns: ran.result.columns, rows: ran.result.rows };
  });
  get('/console/api/queries/:name/csv', async (ctx, who, q) => {
    const ran = await runQuery(ctx, who, q);
    if (!ran) return notFound(ctx);
    ctx.type = 'text/csv; charset=utf-8';
    ctx.set('content-disposition', `attachment; filename="${ran.name}.csv"`);
    ctx.body = toCsv(ran.result.columns, ran.result.rows);
  });

  get('/console/api/status', async (ctx, who) => {
    ctx.body = { status: (await c.operations.status()).filter((l) => maySeeOrg(who.principal, l.org)) };
  });

  get('/console/api/coverage', async (ctx, who, q) => {
    if (!q.org || !sees(ctx, who, q.org)) return notFound(ctx);
    const range = parseRange(q, c.now(), 1);
    ctx.body = await c.operations.coverage(
      q.org,
      new Date(range.sinceMs).toISOString(),
      new Date(range.untilMs).toISOString(),
    );
  });
}
