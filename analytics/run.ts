/**
 * Runs a named query against the store: parameters parsed and bound (never
 * spliced), the database substituted for `{db}`, columns in SELECT order.
 */
import type { Store } from '../platform/store/index.js';
import { classifyClickHouseError } from '../platform/store/errors.js';
import { parseParams } from './params.js';
import { ALL_ORGS, allParams, forAllOrgs } from './query.js';
import { findQuery } from './registry.js';

export interface QueryResult {
  readonly columns: string[];
  readonly rows: Array<Record<string, unknown>>;
}

/** Raw text parameters (CLI flags, URL query) by name. */
export type RawParams = Readonly<Record<string, string | undefined>>;

/**
 * The SQL `name` runs for `database` and the typed parameters to bind; throws QUERY_INVALID naming a wrong parameter.
 */
export function prepareQuery(
  name: string,
  database: string,
  raw: RawParams,
): { sql: string; params: Record<string, string | number> } {
  const q = findQuery(name);
  const params = parseParams(allParams(q), raw);
  const sql = params.org === ALL_ORGS ? forAllOrgs(q) : q.sql;
  return { sql: sql.replaceAll('{db}', database), params };
}

/** Runs the named query; rows as JSON values (64-bit integers as strings), columns in SELECT order. */
export async function runNamedQuery(store: Store, name: string, raw: RawParams): Promise<QueryResult> {
  const { sql, params } = prepareQuery(name, store.database, raw);
  try {
    // JSON rather than store.query's JSONEachRow: its `meta` names the columns even when no row matched.
    const rs = await store.client.query({ query: sql, query_params: params, format: 'JSON' });
    const body = await rs.json<Record<string, unknown>>();
    return { columns: body.meta?.map((m) => m.name) ?? [], rows: body.data };
  } catch (err) {
    throw classifyClickHouseError(err);
  }
}
