/**
 * The query library: every named query, looked up by name. Add a query by
 * adding it to one of the area files under queries/; names are unique.
 */
import { HooklogError } from '../platform/errors.js';
import { allParams, type NamedQuery } from './query.js';
import { CLICKHOUSE_TYPE } from './params.js';
import { adminQueries } from './queries/admin.js';
import { coverageQueries } from './queries/coverage.js';
import { operationsQueries } from './queries/operations.js';
import { sessionQueries } from './queries/sessions.js';
import { signInQueries } from './queries/sign-in.js';

export const QUERIES: readonly NamedQuery[] = [
  ...signInQueries,
  ...sessionQueries,
  ...adminQueries,
  ...operationsQueries,
  ...coverageQueries,
];

const BY_NAME = new Map(QUERIES.map((q) => [q.name, q]));
if (BY_NAME.size !== QUERIES.length) throw new Error('analytics: duplicate query name');

/** The query called `name`, or QUERY_INVALID listing the names there are. */
export function findQuery(name: string): NamedQuery {
  const q = BY_NAME.get(name);
  if (!q)
    throw new HooklogError(
      'QUERY_INVALID',
      `no query named ${JSON.stringify(name.slice(0, 80))} (see \`hooklog query --list\`)`,
    );
  return q;
}

/** A JSON-friendly description of every query and its parameters (for --list and GET /api/queries). */
export function describeQueries(): Array<{
  name: string;
  area: string;
  description: string;
  params: Array<{ name: string; type: string; required: boolean; default?: string | number; description: string }>;
}> {
  return QUERIES.map((q) => ({
    name: q.name,
    area: q.area,
    description: q.description,
    params: allParams(q).map((p) => ({
      name: p.name,
      type: CLICKHOUSE_TYPE[p.kind],
      required: p.default === undefined,
      ...(p.default === undefined ? {} : { default: p.default }),
      description: p.description,
    })),
  }));
}
