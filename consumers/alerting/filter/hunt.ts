/**
 * `hooklog hunt`'s query: a filter compiled by the shared compiler
 * (platform/filter/sql.ts) over one org's events in a range.
 */
import { EVENTS_TABLE } from '../../../schemas/tables.js';
import { filterToSql, type CompiledSql } from '../../../platform/filter/sql.js';
import { filterPaths, type FilterNode } from '../../../platform/filter/parse.js';
import { HooklogError } from '../../../platform/errors.js';
import { ACTOR_CONTEXT_PATHS } from '../../../schemas/logevent-fields.js';

/**
 * A hunt: the matching events of one org in [since, until), newest last.
 * `{db}` is the store's database (a validated identifier); the rest is bound.
 */
export function huntQuery(node: FilterNode): CompiledSql & { sql: string } {
  // The actor's identity context is given to events as rules run (identity/context.ts): the stored events have
  // none, so a hunt naming it would match nothing in silence.
  const context = filterPaths(node).find((p) => ACTOR_CONTEXT_PATHS.some((c) => c.toLowerCase() === p.toLowerCase()));
  if (context !== undefined)
    throw new HooklogError(
      'QUERY_INVALID',
      `${JSON.stringify(context)} is identity context that alerting gives events as its rules run (docs/detect/rules.md#identity-context); stored events do not carry it, so a hunt cannot filter on it`,
    );
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
