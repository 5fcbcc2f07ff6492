/**
 * Alerts as the console reads them: the `alerts` table (one row per finding,
 * written by alerting's ClickHouse output) joined with the fold of
 * `alert_states`. Every read names the orgs the principal may see; values are
 * bound parameters, never spliced.
 */
import type { Store } from '../platform/store/index.js';
import { formatDateTime64 } from '../platform/time.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import { currentStateSql, STATUSES, type AlertStatus } from './alert-states.js';
import { orgCondition, type Scope } from './scope.js';
import { arrayHas } from './value-ref.js';

export interface AlertFilter {
  readonly scope: Scope;
  readonly rule?: string;
  readonly severity?: string;
  readonly status?: AlertStatus;
  /** Only alerts assigned to this ('' = unassigned). */
  readonly assignee?: string;
  /** Only alerts whose group key (JSON array of the rule's group-by values) holds this value (or reference). */
  readonly groupKeyHas?: string;
  /** Only alerts with this text (case-insensitive) in their rule id, rule title or group key. */
  readonly text?: string;
  readonly since: string;
  readonly until: string;
  readonly limit: number;
  /**
   * The list's snapshot: only alerts that existed at this time (epoch ms) are
   * listed and counted, so alerts arriving meanwhile shift no page. A grouped
   * alert's later revisions keep it in (its first record was there).
   */
  readonly asOf?: number;
  readonly sort?: AlertSort;
  /** Keyset position: the rows after (or, with `before`, before) this key in the sort's order. */
  readonly after?: SortKey;
  readonly before?: SortKey;
}

export const SORTS = ['time', 'severity', 'count', 'status'] as const;
export type SortField = (typeof SORTS)[number];
export interface AlertSort {
  readonly by: SortField;
  readonly desc: boolean;
}
/** A row's place in a sort: its sort value (a number for every sort) and its id, which breaks ties. */
export type SortKey = readonly [number, string];

/** Each sort as a number per row (so one keyset condition serves them all); severity and status by rank. */
const SORT_EXPR: Readonly<Record<SortField, string>> = {
  time: 'sort_time',
  severity: 'sort_severity',
  count: 'sort_count',
  status: "indexOf(['open', 'acknowledged', 'closed'], status)",
};

export interface AlertRow {
  readonly alert_id: string;
  readonly org: string;
  readonly rule_id: string;
  readonly rule_title: string;
  readonly severity: string;
  readonly kind: string;
  readonly group_key: string;
  readonly event_count: string;
  readonly event_ids: string[];
  readonly event_time: string;
  readonly first_event_time: string;
  readonly status: AlertStatus;
  readonly resolution: string;
  readonly assignee: string | null;
  readonly updated_at: string | null;
  /** The row's value in the list's sort (a keyset position with its alert_id). */
  readonly sort_value?: string;
}

const TIME = "DateTime64(3, 'UTC')";
export const MAX_TEXT_FILTER = 200;

/**
 * Alerts with their current state; the state filter applies after the fold.
 * `stateWhere` narrows the fold (default: the scope's orgs).
 */
function alertsSql(db: string, scope: Scope, where: string, outer: string, stateWhere?: string): string {
  return `SELECT * FROM (
  SELECT a.alert_id AS alert_id, a.org AS org, a.rule_id AS rule_id, a.rule_title AS rule_title, a.severity AS severity,
         a.kind AS kind, a.group_key AS group_key, toString(a.event_count) AS event_count, a.event_ids AS event_ids,
         toString(a.event_time) AS event_time, toString(a.first_event_time) AS first_event_time,
         if(s.state_status = '', 'open', s.state_status) AS status, s.state_resolution AS resolution,
         s.state_assignee AS assignee, if(s.state_updated_at = '', NULL, s.state_updated_at) AS updated_at,
         toUnixTimestamp64Milli(a.event_time) AS sort_time, a.event_count AS sort_count,
         ${SEVERITY_RANK} AS sort_severity,
         ${SNAPSHOT} AS in_snapshot
  FROM ${db}.alerts AS a FINAL
  LEFT JOIN (${currentStateSql(db, stateWhere ?? orgCondition('org', scope))}) AS s ON s.org = a.org AND s.alert_id = a.alert_id
  WHERE ${orgCondition('a.org', scope)} AND ${where}
) WHERE ${outer}`;
}

const SEVERITY_RANK = `multiIf(a.severity = 'critical', 5, a.severity = 'high', 4, a.severity = 'medium', 3,
  a.severity = 'low', 2, a.severity = 'informational', 1, 0)`;

/**
 * In the snapshot at {asof}: inserted by then. A grouped alert's revisions are
 * inserted later with the same id and event_time (the opening finding's), so a
 * revision counts from its event_time: it stays in the snapshot it was in.
 */
const SNAPSHOT = `(a.event_time <= {asof:${TIME}} AND (a.ingested_at <= {asof:${TIME}} OR a.revision > 0))`;

/** The conditions and parameters of a filter (without its snapshot, sort and position). */
function filterSql(f: AlertFilter, asOf: number): { where: string; outer: string[]; params: Record<string, unknown> } {
  const keyHas =
    f.groupKeyHas === undefined
      ? undefined
      : arrayHas("JSONExtract(a.group_key, 'Array(String)')", 'gk', f.groupKeyHas);
  const where = [
    `a.event_time >= {since:${TIME}}`,
    `a.event_time < {until:${TIME}}`,
    ...(f.rule ? ['a.rule_id = {rule:String}'] : []),
    ...(f.severity ? ['a.severity = {severity:String}'] : []),
    ...(keyHas ? [keyHas.sql] : []),
    ...(f.text
      ? [
          '(positionCaseInsensitiveUTF8(a.rule_id, {text:String}) > 0 OR positionCaseInsensitiveUTF8(a.rule_title, {text:String}) > 0' +
            ' OR positionCaseInsensitiveUTF8(a.group_key, {text:String}) > 0)',
        ]
      : []),
  ].join(' AND ');
  const outer = [
    ...(f.status ? ['status = {status:String}'] : []),
    ...(f.assignee !== undefined ? ["ifNull(assignee, '') = {assignee:String}"] : []),
  ];
  return {
    where,
    outer,
    params: {
      orgs: [...f.scope.orgs],
      since: f.since,
      until: f.until,
      asof: formatDateTime64(asOf),
      ...(f.rule ? { rule: f.rule } : {}),
      ...(f.severity ? { severity: f.severity } : {}),
      ...(f.status ? { status: f.status } : {}),
      ...(f.assignee !== undefined ? { assignee: f.assignee } : {}),
      ...(keyHas ? { gk: keyHas.param } : {}),
      ...(f.text ? { text: f.text } : {}),
    },
  };
}

/**
 * One page of alerts in the filter's sort (default: newest first), after or
 * before a keyset position: a page costs the same deep in the list as at its
 * head, and rows arriving elsewhere in the order do not shift it.
 */
export async function listAlerts(store: Store, f: AlertFilter): Promise<AlertRow[]> {
  const asOf = f.asOf ?? Date.now();
  const { where, outer, params } = filterSql(f, asOf);
  const sort = f.sort ?? { by: 'time', desc: true };
  const key = SORT_EXPR[sort.by];
  const at = f.before ?? f.after;
  // Walking backwards (before a position) reads the reversed order, then turns the page round.
  const backwards = f.before !== undefined;
  const desc = sort.desc !== backwards;
  const conds = [
    ...outer,
    ...(f.asOf !== undefined ? ['in_snapshot'] : []),
    ...(at ? [`(${key}, alert_id) ${desc ? '<' : '>'} ({ck:Int64}, {cid:String})`] : []),
  ];
  const order = `ORDER BY ${key} ${desc ? 'DESC' : 'ASC'}, alert_id ${desc ? 'DESC' : 'ASC'} LIMIT {limit:UInt32}`;
  const bound = { ...params, limit: f.limit, ...(at ? { ck: at[0], cid: at[1] } : {}) };
  // First the page's ids, reading only what the filter and the sort need: without a state filter or sort, the
  // alerts alone (joining every alert with its state costs most of a list of 100,000); then the page's rows whole.
  const needsState = outer.length > 0 || sort.by === 'status';
  const picked = await store.query<{ alert_id: string; sort_value: string }>(
    needsState
      ? `SELECT alert_id, toString(${key}) AS sort_value
FROM (${alertsSql(store.database, f.scope, where, conds.length ? conds.join(' AND ') : '1')}) ${order}`
      : `SELECT alert_id, toString(${key}) AS sort_value FROM (
  SELECT a.alert_id AS alert_id, toUnixTimestamp64Milli(a.event_time) AS sort_time, a.event_count AS sort_count,
         ${SEVERITY_RANK} AS sort_severity, ${SNAPSHOT} AS in_snapshot
  FROM ${store.database}.alerts AS a FINAL
  WHERE ${orgCondition('a.org', f.scope)} AND ${where}
) WHERE ${conds.length ? conds.join(' AND ') : '1'} ${order}`,
    bound,
  );
  if (picked.length === 0) return [];
  const ids = picked.map((r) => r.alert_id);
  const whole = await store.query<AlertRow>(
    `SELECT * EXCEPT (sort_time, sort_count, sort_severity, in_snapshot) FROM (${alertsSql(
      store.database,
      f.scope,
      'a.alert_id IN {ids:Array(String)}',
      '1',
      `${orgCondition('org', f.scope)} AND alert_id IN {ids:Array(String)}`,
    )})`,
    { orgs: params.orgs, ids, asof: params.asof },
  );
  const byId = new Map(whole.map((r) => [r.alert_id, r]));
  const rows = picked.flatMap((p) => {
    const r = byId.get(p.alert_id);
    return r ? [{ ...r, sort_value: p.sort_value }] : [];
  });
  return backwards ? rows.reverse() : rows;
}

export interface AlertCounts {
  /** Alerts matching the filter in its snapshot. */
  readonly total: number;
  readonly byStatus: Readonly<Record<AlertStatus, number>>;
  /** Alerts matching the filter that arrived after the snapshot (a new snapshot shows them). */
  readonly newer: number;
}

/** How many alerts match the filter in its snapshot (by status), and how many arrived since. */
export async function countAlerts(
  store: Store,
  f: AlertFilter,
  asOf: number,
  live: { readonly until: string; readonly snapshotUntilMs: number },
): Promise<AlertCounts> {
  const { where, outer, params } = filterSql({ ...f, until: live.until }, asOf);
  const bound = { ...params, snapUntil: live.snapshotUntilMs };
  const n = (row: Record<string, string> | undefined, k: string) => Number(row?.[k] ?? 0);
  if (outer.length > 0) {
    // A state filter: every alert with its state.
    const [row] = await store.query<Record<string, string>>(
      `SELECT countIf(in_snapshot AND sort_time < {snapUntil:Int64}) AS total,
       countIf(in_snapshot AND sort_time < {snapUntil:Int64} AND status = 'open') AS open,
       countIf(in_snapshot AND sort_time < {snapUntil:Int64} AND status = 'acknowledged') AS acknowledged,
       countIf(in_snapshot AND sort_time < {snapUntil:Int64} AND status = 'closed') AS closed,
       countIf(NOT in_snapshot) AS newer
FROM (${alertsSql(store.database, f.scope, where, outer.join(' AND '))})`,
      bound,
    );
    return {
      total: n(row, 'total'),
      byStatus: { open: n(row, 'open'), acknowledged: n(row, 'acknowledged'), closed: n(row, 'closed') },
      newer: n(row, 'newer'),
    };
  }
  // No state filter: the totals from the alerts alone, and the acknowledged and closed among them from the states
  // of those alerts (the rest are open), without joining every alert with its state.
  const inSnapshot = `${orgCondition('a.org', f.scope)} AND ${where} AND ${SNAPSHOT}
  AND toUnixTimestamp64Milli(a.event_time) < {snapUntil:Int64}`;
  const [[totals], states] = await Promise.all([
    store.query<Record<string, string>>(
      `SELECT countIf(${SNAPSHOT} AND toUnixTimestamp64Milli(a.event_time) < {snapUntil:Int64}) AS total,
       countIf(NOT ${SNAPSHOT}) AS newer
FROM ${store.database}.alerts AS a FINAL WHERE ${orgCondition('a.org', f.scope)} AND ${where}`,
      bound,
    ),
    store.query<{ state_status: string; n: string }>(
      `SELECT state_status, count() AS n FROM (${currentStateSql(
        store.database,
        `${orgCondition('org', f.scope)} AND alert_id IN (SELECT a.alert_id FROM ${store.database}.alerts AS a FINAL WHERE ${inSnapshot})`,
      )}) GROUP BY state_status`,
      bound,
    ),
  ]);
  const of = (status: string) => Number(states.find((r) => r.state_status === status)?.n ?? 0);
  const total = n(totals, 'total');
  const acknowledged = of('acknowledged');
  const closed = of('closed');
  return { total, byStatus: { open: total - acknowledged - closed, acknowledged, closed }, newer: n(totals, 'newer') };
}

/** Every alert matching the filter in its snapshot (id, org, status): what a change by filter applies to. */
export function matchingAlerts(
  store: Store,
  f: AlertFilter,
  asOf: number,
  max: number,
): Promise<Array<{ alert_id: string; org: string; status: AlertStatus }>> {
  const { where, outer, params } = filterSql(f, asOf);
  return store.query(
    `SELECT alert_id, org, status FROM (${alertsSql(store.database, f.scope, where, [...outer, 'in_snapshot'].join(' AND '))})
LIMIT {max:UInt32}`,
    { ...params, max },
  );
}

/** The assignees of the orgs' alerts, for the filter form (at most 100). */
export async function alertAssignees(store: Store, scope: Scope): Promise<string[]> {
  const rows = await store.query<{ assignee: string }>(
    `SELECT DISTINCT assignee FROM ${store.database}.alert_states
WHERE ${orgCondition('org', scope)} AND assignee IS NOT NULL AND assignee != '' ORDER BY assignee LIMIT 100`,
    { orgs: [...scope.orgs] },
  );
  return rows.map((r) => r.assignee);
}

/** One alert among the orgs of `scope`: undefined when there is none there (or anywhere). */
export async function getAlert(store: Store, alertId: string, scope: Scope): Promise<AlertRow | undefined> {
  const rows = await store.query<AlertRow>(
    `${alertsSql(store.database, scope, 'a.alert_id = {id:String}', '1')} LIMIT 1`,
    { id: alertId, orgs: [...scope.orgs], asof: formatDateTime64(Date.now()) },
  );
  return rows[0];
}

/** The orgs of these alert ids (to check them all before a bulk change). */
export async function orgsOfAlerts(store: Store, ids: readonly string[]): Promise<Map<string, string>> {
  const rows = await store.query<{ alert_id: string; org: string }>(
    `SELECT DISTINCT alert_id, org FROM ${store.database}.alerts WHERE alert_id IN {ids:Array(String)}`,
    { ids: [...ids] },
  );
  return new Map(rows.map((r) => [r.alert_id, r.org]));
}

export interface HistoryRow {
  readonly at: string;
  readonly action: string;
  readonly status: string;
  readonly resolution: string;
  readonly assignee: string | null;
  readonly note: string;
  readonly actor: string;
  readonly actor_name: string;
  readonly actor_kind: string;
  readonly change_id: string;
}

export function alertHistory(store: Store, org: string, alertId: string): Promise<HistoryRow[]> {
  return store.query<HistoryRow>(
    `SELECT toString(at) AS at, action, status, resolution, assignee, note, actor, actor_name, actor_kind, change_id
FROM ${store.database}.alert_states FINAL WHERE org = {org:String} AND alert_id = {id:String}
ORDER BY at, change_id`,
    { org, id: alertId },
  );
}

/** Whether the changes with these ids are all readable (a change is visible once the sink wrote it). */
export async function changesVisible(store: Store, changeIds: readonly string[]): Promise<boolean> {
  const rows = await store.query<{ n: string }>(
    `SELECT count() AS n FROM ${store.database}.alert_states WHERE change_id IN {ids:Array(String)}`,
    { ids: [...changeIds] },
  );
  return Number(rows[0]?.n ?? 0) >= new Set(changeIds).size;
}

/** The events behind an alert (at most its 20 ids), within its time span. */
export function alertEvents(store: Store, a: AlertRow): Promise<Array<Record<string, unknown>>> {
  return store.query(
    `SELECT uuid, toString(published) AS published, event_type, actor_alternate_id AS actor, actor_display_name,
       client_ip, geo_country, client_user_agent, outcome_result AS outcome, outcome_reason, display_message
FROM ${store.database}.${EVENTS_TABLE} AS e FINAL
WHERE e.org = {org:String} AND e.uuid IN {ids:Array(String)}
  AND e.published >= {since:${TIME}} - INTERVAL 1 DAY AND e.published <= {until:${TIME}} + INTERVAL 1 SECOND
ORDER BY published`,
    { org: a.org, ids: a.event_ids, since: a.first_event_time, until: a.event_time },
  );
}

/** The rules and severities seen in the orgs' alerts, for the filter form. */
export function alertFacets(
  store: Store,
  scope: Scope,
): Promise<Array<{ rule_id: string; rule_title: string; severity: string; n: string }>> {
  return store.query(
    `SELECT rule_id, any(rule_title) AS rule_title, any(severity) AS severity, count() AS n
FROM ${store.database}.alerts WHERE ${orgCondition('org', scope)} GROUP BY rule_id ORDER BY rule_id LIMIT 500`,
    { orgs: [...scope.orgs] },
  );
}

export function isStatus(v: string | undefined): v is AlertStatus {
  return STATUSES.includes(v as AlertStatus);
}
