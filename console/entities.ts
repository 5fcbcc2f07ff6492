/**
 * The entity pages' figures: one user of one org, or one IP across the orgs
 * the principal may see. Each figure comes with the filter that selects the
 * events behind it (events.ts reads them with the same expressions), so the
 * page can link every number to its events. One scan per figure family:
 * GROUPING SETS give countries, IPs, devices and event types in one pass.
 */
import type { Store } from '../platform/store/index.js';
import { FAILED_OUTCOMES, SIGN_IN_EVENT_TYPES, sqlList } from '../schemas/event-types.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import { isRef } from './display.js';
import { bucketMinutes, type TimeRange } from './range.js';
import { orgCondition, type Scope } from './scope.js';
import { arrayHas, valueIs } from './value-ref.js';

const TIME = "DateTime64(3, 'UTC')";
/** On the events table read `AS e`: qualified, so a selected alias named `published` cannot shadow the column. */
export const IN_RANGE = `e.published >= {since:${TIME}} AND e.published < {until:${TIME}}`;
export const SIGN_IN = `event_type IN ${sqlList(SIGN_IN_EVENT_TYPES)}`;
export const FAILED = `outcome_result IN ${sqlList(FAILED_OUTCOMES)}`;
/** What the console calls a device: browser, OS and device kind as the service parsed them. */
export const DEVICE =
  "concat(ifNull(client_browser, '?'), ' / ', ifNull(client_os, '?'), ' / ', ifNull(client_device, '?'))";
/** Event types that use a factor, and where the factor's name is in the event. */
export const FACTOR_TYPES =
  "(event_type = 'user.authentication.auth_via_mfa' OR event_type LIKE 'user.mfa.%' OR event_type LIKE 'system.push.%')";
export const FACTOR =
  "coalesce(nullIf(JSONExtractString(raw, 'debugContext', 'debugData', 'factor'), ''), nullIf(arrayFirst((v, t) -> t IN ('AuthenticatorEnrollment', 'Authenticator'), target_display_name, target_type), ''), event_type)";
/** Administrative changes (prefixes the sorting key prunes with). */
export const ADMIN_TYPES =
  "(event_type LIKE 'user.account.%' OR event_type LIKE 'user.lifecycle.%' OR event_type LIKE 'group.%' OR event_type LIKE 'application.%' OR event_type LIKE 'policy.lifecycle.%' OR event_type LIKE 'policy.rule.%' OR event_type LIKE 'zone.%' OR event_type LIKE 'system.%' OR event_type LIKE 'app.oauth2.as.%' OR event_type LIKE 'iam.%' OR event_type LIKE 'user.mfa.factor.%')";

const EVENTS = (db: string) => `${db}.${EVENTS_TABLE} AS e FINAL`;

export interface Breakdown {
  readonly value: string;
  readonly n: string;
  readonly failed: string;
  readonly last: string;
}

export interface TimePoint {
  readonly t: string;
  readonly success: string;
  readonly failure: string;
  readonly other: string;
}

/** Every bucket of the range, empty ones as zeros, so a chart spans the range asked for. */
export function fillBuckets(points: readonly TimePoint[], r: TimeRange, minutes: number): TimePoint[] {
  const step = minutes * 60_000;
  const key = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
  const have = new Map(points.map((p) => [p.t, p]));
  const out: TimePoint[] = [];
  for (let t = Math.floor(r.sinceMs / step) * step; t < r.untilMs && out.length < 2000; t += step) {
    const k = key(t);
    out.push(have.get(k) ?? { t: k, success: '0', failure: '0', other: '0' });
  }
  return out;
}

async function timeline(
  store: Store,
  where: string,
  params: Record<string, unknown>,
  r: TimeRange,
): Promise<TimePoint[]> {
  const minutes = bucketMinutes(r);
  const points = await store.query<TimePoint>(
    `SELECT toString(toDateTime(toStartOfInterval(published, toIntervalMinute({bucket:UInt32})), 'UTC')) AS t,
       countIf(outcome_result = 'SUCCESS' OR outcome_result = 'ALLOW') AS success, countIf(${FAILED}) AS failure,
       count() - success - failure AS other
FROM ${EVENTS(store.database)} WHERE ${where} AND ${IN_RANGE} AND ${SIGN_IN}
GROUP BY t ORDER BY t`,
    { ...params, since: r.since, until: r.until, bucket: minutes },
  );
  return fillBuckets(points, r, minutes);
}

/** Several breakdowns of one set of events in one scan; `dims` maps a name to its SQL expression. */
async function breakdowns(
  store: Store,
  where: string,
  params: Record<string, unknown>,
  r: TimeRange,
  dims: Readonly<Record<string, string>>,
  perDim = 50,
): Promise<Record<string, Breakdown[]>> {
  const names = Object.keys(dims);
  const rows = await store.query<{ g: number; n: string; failed: string; last: string } & Record<string, string>>(
    `SELECT ${names.map((n) => `${dims[n]} AS ${n}`).join(', ')}, grouping(${names.join(', ')}) AS g,
       count() AS n, countIf(${FAILED}) AS failed, toString(max(published)) AS last
FROM ${EVENTS(store.database)} WHERE ${where} AND ${IN_RANGE}
GROUP BY GROUPING SETS (${names.map((n) => `(${n})`).join(', ')})
ORDER BY n DESC`,
    { ...params, since: r.since, until: r.until },
  );
  const out: Record<string, Breakdown[]> = Object.fromEntries(names.map((n) => [n, []]));
  rows.forEach((row) => {
    // grouping() has a bit per argument, the first argument highest; 1 where that column is aggregated away.
    const i = names.findIndex((_, k) => ((row.g >> (names.length - 1 - k)) & 1) === 0);
    const name = names[i];
    if (name && out[name]!.length < perDim)
      out[name]!.push({ value: String(row[name] ?? ''), n: row.n, failed: row.failed, last: row.last });
  });
  return out;
}

export interface EventLine {
  readonly uuid: string;
  readonly published: string;
  readonly event_type: string;
  readonly actor: string | null;
  readonly targets: string;
  readonly ip: string | null;
  readonly outcome: string | null;
  readonly display_message: string | null;
}

const LINE = `uuid, toString(published) AS published, event_type, actor_alternate_id AS actor,
       arrayStringConcat(arrayFilter(x -> x != '', target_alternate_id), ', ') AS targets, client_ip AS ip,
       outcome_result AS outcome, display_message`;

/** Everything the user page shows about `user` (an actor's alternate id, usually the login) of `org`. */
export async function userFigures(store: Store, org: string, user: string, r: TimeRange) {
  const actorIs = valueIs('actor_alternate_id', 'user', user);
  const p = { org, user: actorIs.param };
  const mine = `org = {org:String} AND ${actorIs.sql}`;
  const [signIns, figures, factors, admin] = await Promise.all([
    timeline(store, mine, p, r),
    breakdowns(store, mine, p, r, {
      country: "ifNull(geo_country, '')",
      ip: "ifNull(client_ip, '')",
      device: DEVICE,
      event_type: 'event_type',
    }),
    breakdowns(store, `${mine} AND ${FACTOR_TYPES}`, p, r, { factor: FACTOR }),
    store.query<EventLine & { role: string }>(
      `SELECT ${LINE}, if(${actorIs.sql}, 'by', 'to') AS role
FROM ${EVENTS(store.database)}
WHERE org = {org:String} AND ${IN_RANGE} AND ${ADMIN_TYPES}
  AND (${actorIs.sql} OR ${arrayHas('target_alternate_id', 'user', user).sql})
ORDER BY published DESC LIMIT 100`,
      { ...p, since: r.since, until: r.until },
    ),
  ]);
  return { signIns, ...figures, factor: factors.factor ?? [], admin };
}

/** Everything the IP page shows about `ip` in the orgs of `scope`. */
export async function ipFigures(store: Store, scope: Scope, ip: string, r: TimeRange) {
  const ipIs = valueIs('client_ip', 'ip', ip);
  const p = { orgs: [...scope.orgs], ip: ipIs.param };
  const where = `${orgCondition('org', scope)} AND ${ipIs.sql}`;
  const [signIns, figures] = await Promise.all([
    timeline(store, where, p, r),
    breakdowns(store, where, p, r, {
      org: 'org',
      user: "ifNull(actor_alternate_id, '')",
      outcome: "ifNull(outcome_result, '')",
      event_type: 'event_type',
      country: "ifNull(geo_country, '')",
      network: "ifNull(as_org, '')",
    }),
  ]);
  return { signIns, ...figures };
}

/**
 * The value a URL's reference stands for (value-ref.ts), read from the events
 * `where` selects (bound `params`); a plain value as it is. Undefined when no
 * event has it: the page then shows the reference.
 */
export async function resolveRef(
  store: Store,
  expr: string,
  value: string,
  where: string,
  params: Record<string, unknown>,
): Promise<string | undefined> {
  if (!isRef(value)) return value;
  const is = valueIs(expr, 'ref', value);
  const rows = await store.query<{ v: string }>(
    `SELECT ${expr} AS v FROM ${store.database}.${EVENTS_TABLE} AS e WHERE ${where} AND ${is.sql} LIMIT 1`,
    { ...params, ref: is.param },
  );
  return rows[0]?.v;
}

/** Groups the user page shows of one user; the rest are counted (a record holds up to 1,000). */
export const IDENTITY_GROUPS_SHOWN = 100;

/** What the identity sync last read of a user (ingest/identity/, table identity_users): status, groups, roles. */
export interface IdentityFacts {
  readonly user_id: string;
  readonly login: string;
  readonly status: string;
  readonly groups: Array<{ id: string; name: string }>;
  /** Groups beyond those shown. */
  readonly more_groups: number;
  readonly admin_roles: string[];
  readonly truncated: boolean;
  readonly last_updated: string | null;
  readonly synced_at: string;
}

/**
 * The user's identity record in `org` (by login or user id, as the page's user may be either), or null when the
 * sync has none (not enabled for the org, not synced yet, or the user deleted).
 */
export async function identityFacts(store: Store, org: string, user: string): Promise<IdentityFacts | null> {
  const rows = await store.query<
    Omit<IdentityFacts, 'groups' | 'more_groups'> & { ids: string[]; names: string[]; n: number }
  >(
    `SELECT user_id, login, status, arraySlice(group_ids, 1, ${IDENTITY_GROUPS_SHOWN}) AS ids,
       arraySlice(group_names, 1, ${IDENTITY_GROUPS_SHOWN}) AS names, length(group_ids) AS n, admin_roles, truncated,
       toString(last_updated) AS last_updated, toString(synced_at) AS synced_at
FROM ${store.database}.identity_users FINAL
WHERE org = {org:String} AND (login = {user:String} OR user_id = {user:String})
ORDER BY synced_at DESC LIMIT 1`,
    { org, user },
  );
  const r = rows[0];
  if (!r) return null;
  return {
    user_id: r.user_id,
    login: r.login,
    status: r.status,
    groups: r.ids.map((id, i) => ({ id, name: r.names[i] ?? '' })),
    more_groups: Math.max(0, Number(r.n) - r.ids.length),
    admin_roles: r.admin_roles,
    truncated: Boolean(r.truncated),
    last_updated: r.last_updated,
    synced_at: r.synced_at,
  };
}
