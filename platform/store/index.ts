export { openStore, assertIdentifier, type Store, type OpenStoreOptions, type QueryParams } from './store.js';
export type { ReadOnlyResult } from './read-only.js';
export { migrate, loadMigrations, splitStatements, renderStatement, defaultMigrationsDir, type Migration } from './migrate.js';
export { classifyClickHouseError } from './errors.js';
export { storeOptions, withConfiguredStore } from './from-config.js';
