/**
 * `hooklog query`: the library from the command line. Like `hooklog sql`, it
 * asks a running hooklog through its admin socket when embedded ClickHouse is
 * in use (the engine admits one process), and otherwise opens the store.
 */
import type { Config } from './config/schema.js';
import { HooklogError } from '../platform/errors.js';
import { withConfiguredStore } from '../platform/store/index.js';
import { namedQueryViaAdminSocket } from './admin-socket.js';
import type { ResultSet } from './format.js';
import { QueryParamError } from '../analytics/params.js';
import { describeQueries, findQuery } from '../analytics/registry.js';
import { runNamedQuery } from '../analytics/run.js';

/** `--param k=v` pairs (and the named flags) as raw parameters; a malformed pair names itself. */
export function collectParams(
  named: Readonly<Record<string, string | undefined>>,
  pairs: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(named)) if (v !== undefined) out[k] = v;
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new QueryParamError(pair, 'give parameters as --param name=value');
    const name = pair.slice(0, eq);
    if (name in out) throw new QueryParamError(name, 'given twice');
    out[name] = pair.slice(eq + 1);
  }
  return out;
}

/** The library as a table: one row per query. */
export function listQueries(): ResultSet {
  const rows = describeQueries().map((q) => ({
    name: q.name,
    area: q.area,
    params: q.params
      .filter((p) => !['org', 'since', 'until', 'limit'].includes(p.name))
      .map((p) => `${p.name}=${p.default ?? ''}`)
      .join(' '),
    description: q.description,
  }));
  return { columns: ['name', 'area', 'params', 'description'], rows };
}

export async function runQueryCommand(
  config: Config,
  name: string,
  params: Record<string, string>,
): Promise<ResultSet> {
  findQuery(name); // an unknown name fails before any store is touched
  if (!config.store.clickhouse) {
    const viaRunning = await namedQueryViaAdminSocket(config.data_dir, name, params, (message, param) =>
      param
        ? new QueryParamError(param, message.replace(/^parameter "[^"]*": /, ''))
        : new HooklogError('STORE_QUERY_FAILED', message),
    );
    if (viaRunning) return viaRunning;
  }
  return withConfiguredStore(config, (store) => runNamedQuery(store, name, params));
}
