/**
 * The events table's way in (migration 013 for v3; 032 for v4) and its arrivals (032): the sink inserts
 * into `<table>_input`, a Null table, `<table>_input_mv` writes each block on into the table, and
 * `<table>_arrivals_mv` writes each block the table took on into the arrivals table. A Null table with no
 * view behind it takes every insert and keeps nothing, and a table without its arrivals view takes events
 * whose arrivals go nowhere, so both views' presence is checked after every insert: while one is missing
 * the partition is held (the batch fails and is offered again). Once the view is back, the same insert
 * lands what was missing: into the table nothing was written, so no dedup token was recorded there; with
 * the table written and its arrivals view missing, ClickHouse drops the repeat in the table and still
 * hands the block to the view, whose own token check lets it through once.
 */
import { HooklogError } from '../../platform/errors.js';
import { defaultMigrationsDir, loadMigrations, renderStatement, type Store } from '../../platform/store/index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

/** The Null table the sink inserts a table's events into. */
export const inputTable = (table: string): string => `${table}_input`;
const inputView = (table: string): string => `${table}_input_mv`;
const arrivalsView = (table: string): string => `${table}_arrivals_mv`;

/** The arrivals table migration 032's view writes, for `EVENTS_TABLE`. */
export const ARRIVALS_TABLE = 'arrivals';
/**
 * The migration that made `EVENTS_TABLE`'s input and views (032, events v4): its arrivals view is the one statement
 * of that mapping, and running it again is how a dropped view comes back.
 */
const ARRIVALS_MIGRATION = 32;

/**
 * Migration 032's view, for an events table of the same shape writing `arrivals` (a table shaped like
 * `arrivals`): the statement itself with the two tables (and so the view's name) replaced.
 */
function arrivalsViewStatement(db: string, table: string, arrivals: string): string {
  const migration = loadMigrations(defaultMigrationsDir()).find((m) => m.version === ARRIVALS_MIGRATION);
  const statement = migration?.statements.find((s) => s.includes(`TO {db}.${ARRIVALS_TABLE}`));
  if (!statement) throw new HooklogError('MIGRATION_FAILED', `migration ${ARRIVALS_MIGRATION} has no arrivals view`);
  const names = new RegExp(`\\{db\\}\\.(${EVENTS_TABLE}|${ARRIVALS_TABLE})(?![A-Za-z0-9])`, 'g');
  return renderStatement(
    statement.replace(names, (_m, name: string) => `{db}.${name === EVENTS_TABLE ? table : arrivals}`),
    db,
  );
}

/**
 * For an events table other than the one migrations 013 and 032 serve (tests, alternative tables shaped like
 * it): its own input table and view, made like 013's, and, unless `arrivals` is null, its own arrivals view
 * into `arrivals`, made from 032's.
 */
export async function ensureEventsInput(store: Store, table: string, arrivals: string | null): Promise<void> {
  if (table === EVENTS_TABLE) return;
  const db = store.database;
  await store.command(`CREATE TABLE IF NOT EXISTS ${db}.${inputTable(table)} AS ${db}.${inputTable(EVENTS_TABLE)}`);
  await store.command(
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.${inputView(table)} TO ${db}.${table} AS SELECT * FROM ${db}.${inputTable(table)}`,
  );
  if (arrivals !== null) await store.command(arrivalsViewStatement(db, table, arrivals));
}

/**
 * How a dropped view of the events table comes back: the last migration's statement that makes it (a later
 * migration may make it again with more columns: 037 did the input view's), rendered for `db`. Only that
 * statement: re-running its whole migration would repeat work meant for once (032 copies v3 into v4).
 */
export function viewRestore(db: string, view: string): { readonly version: number; readonly sql: string } {
  const makes = `CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.${view} `;
  const found = loadMigrations(defaultMigrationsDir())
    .flatMap((m) => m.statements.filter((st) => st.includes(makes)).map((st) => ({ version: m.version, st })))
    .at(-1);
  if (!found) throw new HooklogError('MIGRATION_FAILED', `no migration makes ${view}`);
  return { version: found.version, sql: renderStatement(found.st, db) };
}

/**
 * Throws STORE_QUERY_FAILED (held, retried) when `table`'s input view is missing, or its arrivals view
 * (unless `arrivals` is null).
 */
export async function checkEventsInput(store: Store, table: string, arrivals: string | null): Promise<void> {
  const views = arrivals === null ? [inputView(table)] : [inputView(table), arrivalsView(table)];
  const found = await store.query<{ name: string }>(
    `SELECT name FROM system.tables
     WHERE database = {db:String} AND name IN {views:Array(String)} AND engine = 'MaterializedView'`,
    { db: store.database, views },
  );
  const present = new Set(found.map((r) => r.name));
  const db = store.database;
  if (!present.has(inputView(table)))
    throw new HooklogError(
      'STORE_QUERY_FAILED',
      `${db}.${inputView(table)} is missing: rows inserted into ${inputTable(table)} would reach no ` +
        `table, so the sink holds its batches; restore it (${restoreHint(db, table, inputView(table))}) and they land`,
    );
  if (arrivals !== null && !present.has(arrivalsView(table)))
    throw new HooklogError(
      'STORE_QUERY_FAILED',
      `${db}.${arrivalsView(table)} is missing: events would reach ${table} but not their arrivals ` +
        `(${arrivals}), so the sink holds its batches; restore it (${restoreHint(db, table, arrivalsView(table))}) and their arrivals land`,
    );
}

/** Where the statement that makes a view is: a migration's for the events table, ensureEventsInput's for others. */
function restoreHint(db: string, table: string, view: string): string {
  if (table !== EVENTS_TABLE) return 'ensureEventsInput makes it';
  return `the CREATE MATERIALIZED VIEW ${db}.${view} statement of migration ${viewRestore(db, view).version}`;
}
