import type { PlatformConfig } from '../config/schema.js';
import { HooklogError } from '../errors.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import { openStore, type OpenStoreOptions, type Store } from './store.js';
import { heldByRunningHooklog, refuseBesideRunningHooklog } from '../data-dir.js';

/** The store the config names: a ClickHouse server when `store.clickhouse` is set, else chdb under data_dir. */
export function storeOptions(config: PlatformConfig, logger: Logger): OpenStoreOptions {
  const server = config.store.clickhouse;
  return {
    database: config.store.database,
    dataDir: config.data_dir,
    logger,
    ...(server
      ? {
          url: server.url,
          username: server.username,
          password: server.password,
          requestTimeoutMs: server.request_timeout_ms,
        }
      : {}),
  };
}

/**
 * Opens the configured store for one command-line operation (`hooklog sql`,
 * `hooklog query`), runs `fn`, and closes it whatever happens. Used when no
 * running hooklog holds the store (embedded ClickHouse admits one process):
 * when one does, this says so in one line instead of a lock error from the
 * engine (commands that can ask the running process do so before this).
 */
export async function withConfiguredStore<T>(config: PlatformConfig, fn: (store: Store) => Promise<T>): Promise<T> {
  const embedded = !config.store.clickhouse;
  if (embedded) await refuseBesideRunningHooklog(config.data_dir, 'embedded ClickHouse');
  let store: Store;
  try {
    store = openStore(storeOptions(config, silentLogger()));
  } catch (err) {
    // Another process took the lock between the check and the open (a second command, a hooklog starting).
    if (embedded && /Cannot lock file|Failed to create connection/i.test((err as Error).message))
      throw heldByRunningHooklog(config.data_dir, 'embedded ClickHouse', err);
    throw new HooklogError('STORE_UNAVAILABLE', `cannot open the store: ${(err as Error).message}`, { cause: err });
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
