/**
 * The events behind a figure: the entity pages link every number here with
 * the filter that produced it, using the same expressions (entities.ts), so
 * the list holds exactly the events that were counted (up to its limit).
 */
import type { Store } from '../platform/store/index.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import { DEVICE, FACTOR, FACTOR_TYPES, FAILED, IN_RANGE, SIGN_IN } from './entities.js';
import type { TimeRange } from './range.js';
import { orgCondition, type Scope } from './scope.js';
import { arrayHas, valueIs } from './value-ref.js';

/**
 * Filters by URL name: each is one condition with one bound parameter, on the
 * value or, for a value too long for a URL, on its reference (value-ref.ts).
 */
const FILTERS: Readonly<Record<string, (value: string) => { sql: string; param: string }>> = {
  user: (v) => valueIs('actor_alternate_id', 'user', v),
  target: (v) => arrayHas('target_alternate_id', 'target', v),
  ip: (v) => valueIs('client_ip', 'ip', v),
  country: (v) => valueIs("ifNull(geo_country, '')", 'country', v),
  network: (v) => valueIs("ifNull(as_org, '')", 'network', v),
  device: (v) => valueIs(DEVICE, 'device', v),
  factor: (v) => {
    const c = valueIs(FACTOR, 'factor', v);
    return { sql: `${FACTOR_TYPES} AND ${c.sql}`, param: c.param };
  },
  event_type: (v) => valueIs('event_type', 'event_type', v),
  outcome: (v) => valueIs("ifNull(outcome_result, '')", 'outcome', v),
};
/** Flags: a condition without a value. */
const FLAGS: Readonly<Record<string, string>> = { sign_in: SIGN_IN, failed: FAILED };

export const EVENT_FILTERS = [...Object.keys(FILTERS), ...Object.keys(FLAGS), 'uuid'] as const;

export interface EventQuery {
  readonly scope: Scope;
  readonly range: TimeRange;
  /** Filter name → value (names from EVENT_FILTERS; `uuid` is a comma-separated list). */
  readonly filters: Readonly<Record<string, string>>;
  readonly limit: number;
}

/** A filter name that is not one of EVENT_FILTERS, or undefined. */
export function unknownFilter(names: readonly string[]): string | undefined {
  return names.find((n) => !(EVENT_FILTERS as readonly string[]).includes(n));
}

export function findEvents(store: Store, q: EventQuery): Promise<Array<Record<string, unknown>>> {
  const where = [orgCondition('org', q.scope), IN_RANGE];
  const params: Record<string, unknown> = { orgs: [...q.scope.orgs], since: q.range.since, until: q.range.until };
  for (const [name, value] of Object.entries(q.filters)) {
    if (name === 'uuid') {
      where.push('uuid IN {uuids:Array(String)}');
      params.uuids = value.split(',').slice(0, 100);
    } else if (FLAGS[name]) {
      if (value === '1') where.push(FLAGS[name]);
    } else if (FILTERS[name]) {
      const c = FILTERS[name](value);
      where.push(c.sql);
      params[name] = c.param;
    }
  }
  return store.query(
    `SELECT org, uuid, toString(published) AS published, event_type, actor_alternate_id AS actor,
       arrayStringConcat(arrayFilter(x -> x != '', target_alternate_id), ', ') AS targets, client_ip AS ip,
       geo_country AS country, ${DEVICE} AS device, outcome_result AS outcome, outcome_reason AS reason, display_message
FROM ${store.database}.${EVENTS_TABLE} AS e FINAL
WHERE ${where.join(' AND ')}
ORDER BY published DESC LIMIT {limit:UInt32}`,
    { ...params, limit: q.limit },
  );
}

/** One event's raw JSON as received (text: the page shows it as text). */
export async function rawEvent(store: Store, org: string, uuid: string): Promise<string | undefined> {
  const rows = await store.query<{ raw: string }>(
    `SELECT raw FROM ${store.database}.${EVENTS_TABLE} FINAL WHERE org = {org:String} AND uuid = {uuid:String} LIMIT 1`,
    { org, uuid },
  );
  return rows[0]?.raw;
}

/**
 * A user's risk, when the risk tables exist (issue 23 adds them): the changes
 * recorded for the user in the org, newest first. Undefined when there is no
 * such table here, so the page says "not available" rather than failing.
 */
export async function riskChanges(
  store: Store,
  org: string,
  user: string,
): Promise<Array<Record<string, unknown>> | undefined> {
  const cols = await store.query<{ name: string }>(
    `SELECT name FROM system.columns WHERE database = {db:String} AND table = 'risk_changes'`,
    { db: store.database },
  );
  const have = new Set(cols.map((c) => c.name));
  const who = ['entity_login', 'entity_id', 'login', 'user'].filter((c) => have.has(c));
  if (!have.has('org') || who.length === 0) return undefined;
  const show = ['at', 'previous', 'current', 'cause', 'rule_id', 'alert_id', 'reason'].filter((c) => have.has(c));
  return store.query(
    `SELECT ${show.map((c) => `toString(${c}) AS ${c}`).join(', ')}
FROM ${store.database}.risk_changes
WHERE org = {org:String} AND (${who.map((c) => `toString(${c}) = {user:String}`).join(' OR ')})
${have.has('at') ? 'ORDER BY at DESC' : ''} LIMIT 50`,
    { org, user },
  );
}
