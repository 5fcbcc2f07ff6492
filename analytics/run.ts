/**
 * Runs a named query against the store: parameters parsed and bound (never
 * spliced), the database substituted for `{db}`, columns in SELECT order.
 */
import type { Store } from '../platform/store/index.js';
import { classifyClickHouseError } from '../platform/store/errors.js';
import { parseParams } from './params.js';
import { ALL_ORGS, allParams, forAllOrgs } from './query.js';
import { findQuery } from './registry.js';
import { foldedDays, foldedParams, NOTHING_FOLDED, stillFolded, type Folded } from './folded.js';

export interface QueryResult {
  readonly columns: string[];
  readonly rows: Array<Record<string, unknown>>;
}

/** Raw text parameters (CLI flags, URL query) by name. */
export type RawParams = Readonly<Record<string, string | undefined>>;

/** Parameters bound to a prepared query: the named query's own, and over every org the folded days. */
export type BoundParams = Record<string, string | number | string[]>;

/**
 * The SQL `name` runs for `database` and the typed parameters to bind; throws QUERY_INVALID naming a wrong parameter.
 * Over every org the query reads `folded` days without FINAL (folded.ts); left out, every day is read with FINAL.
 */
export function prepareQuery(
  name: string,
  database: string,
  raw: RawParams,
  folded: Folded = NOTHING_FOLDED,
): { sql: string; params: BoundParams } {
  const q = findQuery(name);
  const params: BoundParams = parseParams(allParams(q), raw);
  if (params.org !== ALL_ORGS) return { sql: q.sql.replaceAll('{db}', database), params };
  return { sql: forAllOrgs(q).replaceAll('{db}', database), params: { ...params, ...foldedParams(folded) } };
}

/** Looking up the folded days again when one was replaced during the query: past this, every day is read with FINAL. */
const FOLDED_TRIES = 3;

/** Runs the named query; rows as JSON values (64-bit integers as strings), columns in SELECT order. */
export async function runNamedQuery(store: Store, name: string, raw: RawParams): Promise<QueryResult> {
  // Parameters are checked before the store is asked anything.
  const { params } = prepareQuery(name, store.database, raw);
  try {
    if (params.org !== ALL_ORGS) return await run(store, name, raw, NOTHING_FOLDED);
    for (let i = 0; i < FOLDED_TRIES; i++) {
      const folded = await foldedDays(store);
      const result = await run(store, name, raw, folded);
      if (await stillFolded(store, folded)) return result;
    }
    return await run(store, name, raw, NOTHING_FOLDED);
  } catch (err) {
    throw classifyClickHouseError(err);
  }
}

async function run(store: Store, name: string, raw: RawParams, folded: Folded): Promise<QueryResult> {
  const { sql, params } = prepareQuery(name, store.database, raw, folded);
  // JSON rather than store.query's JSONEachRow: its `meta` names the columns even when no row matched.
  const rs = await store.client.query({ query: sql, query_params: params, format: 'JSON' });
  const body = await rs.json<Record<string, unknown>>();
  return { columns: body.meta?.map((m) => m.name) ?? [], rows: body.data };
}
