export { openStore, defaultBackupDir, type Store } from './store.js';
export { migrate, loadMigrations, renderStatement, defaultMigrationsDir } from './migrate.js';
export { storeOptions, withConfiguredStore } from './from-config.js';
