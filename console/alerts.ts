/**
 * Alerts as the console reads them: the `alerts` table (one row per finding,
 * written by alerting's ClickHouse output) joined with the fold of
 * `alert_states`. Every read names the orgs the principal may see; values are
 * bound parameters, never spliced.
 */
import type { Store } from '../platform/store/index.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import { currentStateSql, STATUSES, type AlertStatus } from './alert-states.js';
import { orgCondition, type Scope } from './scope.js';
import { arrayHas } from './value-ref.js';

export interface AlertFilter {
  readonly scope: Scope;
  readonly rule?: string;
  readonly severity?: string;
  readonly status?: AlertStatus;
  readonly assignee?: string;
  /** Only alerts whose group key (JSON array of the rule's group-by values) holds this value (or reference). */
  readonly groupKeyHas?: string;
  readonly since: string;
  readonly until: string;
  readonly limit: number;
}

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
}

const TIME = "DateTime64(3, 'UTC')";

/** Alerts with their current state; the state filter applies after the fold. */
function alertsSql(db: string, scope: Scope, where: string, outer: string): string {
  return `SELECT * FROM (
  SELECT a.alert_id AS alert_id, a.org AS org, a.rule_id AS rule_id, a.rule_title AS rule_title, a.severity AS severity,
         a.kind AS kind, a.group_key AS group_key, toString(a.event_count) AS event_count, a.event_ids AS event_ids,
         toString(a.event_time) AS event_time, toString(a.first_event_time) AS first_event_time,
         if(s.state_status = '', 'open', s.state_status) AS status, s.state_resolution AS resolution,
         s.state_assignee AS assignee, if(s.state_updated_at = '', NULL, s.state_updated_at) AS updated_at
  FROM ${db}.alerts AS a FINAL
  LEFT JOIN (${currentStateSql(db, orgCondition('org', scope))}) AS s ON s.org = a.org AND s.alert_id = a.alert_id
  WHERE ${orgCondition('a.org', scope)} AND ${where}
) WHERE ${outer}`;
}

export async function listAlerts(store: Store, f: AlertFilter): Promise<AlertRow[]> {
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
  ].join(' AND ');
  const outer = [
    ...(f.status ? ['status = {status:String}'] : []),
    ...(f.assignee !== undefined ? ["ifNull(assignee, '') = {assignee:String}"] : []),
  ];
  return store.query<AlertRow>(
    `${alertsSql(store.database, f.scope, where, outer.length ? outer.join(' AND ') : '1')}
ORDER BY event_time DESC, alert_id LIMIT {limit:UInt32}`,
    {
      orgs: [...f.scope.orgs],
      since: f.since,
      until: f.until,
      limit: f.limit,
      ...(f.rule ? { rule: f.rule } : {}),
      ...(f.severity ? { severity: f.severity } : {}),
      ...(f.status ? { status: f.status } : {}),
      ...(f.assignee !== undefined ? { assignee: f.assignee } : {}),
      ...(keyHas ? { gk: keyHas.param } : {}),
    },
  );
}

/** One alert among the orgs of `scope`: undefined when there is none there (or anywhere). */
export async function getAlert(store: Store, alertId: string, scope: Scope): Promise<AlertRow | undefined> {
  const rows = await store.query<AlertRow>(
    `${alertsSql(store.database, scope, 'a.alert_id = {id:String}', '1')} LIMIT 1`,
    { id: alertId, orgs: [...scope.orgs] },
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
