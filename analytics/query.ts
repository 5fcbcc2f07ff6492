/**
 * What a named query is: a name analysts type, the area of the identity
 * service it covers, its parameters, and SQL whose values are all `{name:Type}`
 * placeholders. `{db}` is the only thing substituted, with the store's
 * database (a validated identifier).
 */
import { EVENTS_TABLE } from '../schemas/tables.js';
import { FAILED_OUTCOMES, SIGN_IN_EVENT_TYPES, sqlList } from '../schemas/event-types.js';
import { COMMON_PARAMS, type ParamSpec } from './params.js';

export interface NamedQuery {
  readonly name: string;
  readonly area: string;
  readonly description: string;
  /** Parameters besides org, since, until and limit. */
  readonly params: readonly ParamSpec[];
  readonly sql: string;
  /**
   * The query over every org (`org=*`), where the one-org SQL would group every org's rows at a cost one org
   * never meets: the same result, reached by narrowing the rows first (analytics/all-orgs.test.ts compares
   * the two). Its org conditions are lifted like `sql`'s.
   */
  readonly allOrgsSql?: string;
}

/** Every parameter of `q`, common ones first. */
export function allParams(q: NamedQuery): readonly ParamSpec[] {
  return [...COMMON_PARAMS, ...q.params];
}

/**
 * The deduplicated events of one org in [since, until): reading the events table
 * with FINAL (exact once per event, every known value of its copies) and letting
 * the sorting key (org, event_type, published) prune. Queries add their own
 * event-type filter. Unknown values are NULL: `col != ''` and `col != 0` leave them out.
 */
export const EVENTS = `{db}.${EVENTS_TABLE} FINAL`;
/**
 * The org condition, written the same in every query so that `org=*` (ALL_ORGS) can lift it: run for every
 * org at once, a query reads all orgs' events as one population (rows are not split by org).
 */
export const ORG_MATCH = 'org = {org:String}';
/** The `org` value that means every org. */
export const ALL_ORGS = '*';
export const IN_RANGE = `${ORG_MATCH} AND published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')}`;

/**
 * `q` over every org: its `allOrgsSql` (or `sql`) with the org conditions lifted; the sorting key's other
 * columns still prune. FINAL stays: a day merged into one part (migration 032) is read without merging.
 */
export function forAllOrgs(q: NamedQuery): string {
  return (q.allOrgsSql ?? q.sql).replaceAll(ORG_MATCH, '1 = 1');
}

/** Sign-in events whose outcome says whether a sign-in attempt failed. */
export const SIGN_IN_TYPES = sqlList(SIGN_IN_EVENT_TYPES);
export const FAILED = `outcome_result IN ${sqlList(FAILED_OUTCOMES)}`;

/** The first target of a type (`User`, `AppInstance`, …), or ''. */
export function target(type: string, field: 'id' | 'alternate_id' | 'display_name' = 'alternate_id'): string {
  return `arrayFirst((v, t) -> t = '${type}', target_${field}, target_type)`;
}

export const TIME_BUCKET = 'toStartOfInterval(published, toIntervalMinute({window_minutes:UInt32}))';

export const WINDOW_MINUTES: ParamSpec = {
  name: 'window_minutes',
  kind: 'uint',
  description: 'Length of the time buckets, in minutes.',
  default: 60,
  min: 1,
  max: 10_080,
};

/**
 * An admin change log for event types matching `patterns` (LIKE prefixes,
 * which the primary key still uses): who changed what, when, from where.
 */
export function changeLog(name: string, area: string, description: string, patterns: readonly string[]): NamedQuery {
  const match = patterns.map((p) => `event_type LIKE '${p}'`).join(' OR ');
  return {
    name,
    area,
    description,
    params: [],
    sql: `SELECT published, event_type, outcome_result AS outcome, actor_alternate_id AS actor, toString(client_ip) AS ip,
       arrayStringConcat(arrayFilter(x -> x != '', target_display_name), ', ') AS target,
       arrayStringConcat(target_type, ', ') AS target_types, display_message
FROM ${EVENTS}
WHERE ${IN_RANGE} AND (${match})
ORDER BY published DESC
LIMIT {limit:UInt32}`,
  };
}
