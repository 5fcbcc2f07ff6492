/**
 * `hooklog hunt`'s query: a filter compiled by the shared compiler
 * (platform/filter/sql.ts) over one org's events in a range.
 */
import { EVENTS_TABLE } from '../../../schemas/tables.js';
import { filterToSql, type CompiledSql } from '../../../platform/filter/sql.js';
import type { FilterNode } from '../../../platform/filter/parse.js';

/**
 * A hunt: the matching events of one org in [since, until), newest last.
 * `{db}` is the store's database (a validated identifier); the rest is bound.
 */
export function huntQuery(node: FilterNode): CompiledSql & { sql: string } {
  const { where, params } = filterToSql(node);
  const sql = `SELECT published, uuid, event_type, actor_alternate_id AS actor,
       client_ip AS ip,
       outcome_result AS outcome, arrayStringConcat(arrayFilter(v -> v != '', target_display_name), ', ') AS targets,
       display_message
FROM {db}.${EVENTS_TABLE} FINAL
WHERE org = {org:String} AND published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')}
  AND ${where}
ORDER BY published, uuid
LIMIT {limit:UInt32}`;
  return { where, params, sql };
}
