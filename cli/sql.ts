import type { Config } from './config/schema.js';
import { withConfiguredStore } from '../platform/store/index.js';
import { queryViaAdminSocket } from './admin-socket.js';
import type { ResultSet } from './format.js';

/**
 * `hooklog sql`: embedded ClickHouse admits one process at a time, so when a
 * hooklog is running on this data directory the query goes through its admin
 * socket; otherwise this process opens the store itself. Either way the query
 * runs on a connection the engine holds read-only (platform/store/read-only.ts),
 * never on the one the sink writes with.
 */
export async function runSql(config: Config, sql: string): Promise<ResultSet> {
  if (!config.store.clickhouse) {
    const viaRunning = await queryViaAdminSocket(config.data_dir, sql);
    if (viaRunning) return viaRunning;
  }
  return withConfiguredStore(config, (store) => store.readOnlyQuery(sql));
}
