/**
 * The events table's way in (migration 013): the sink inserts into `<table>_input`, a Null table, and
 * `<table>_input_mv` writes each block on into the table. A Null table with no view behind it takes
 * every insert and keeps nothing, so the view's presence is checked when the sink starts and after
 * every insert: while it is missing the partition is held (the batch fails and is offered again), and
 * the first insert after the view is back lands the rows (nothing reached the table, so no dedup token
 * was recorded there to drop them).
 */
import { HooklogError } from '../../platform/errors.js';
import type { Store } from '../../platform/store/index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

/** The Null table the sink inserts a table's events into. */
export const inputTable = (table: string): string => `${table}_input`;
const inputView = (table: string): string => `${table}_input_mv`;

/**
 * For an events table other than the one migration 013 serves (tests, alternative tables shaped like
 * it): its own input table and view, made like 013's.
 */
export async function ensureEventsInput(store: Store, table: string): Promise<void> {
  if (table === EVENTS_TABLE) return;
  const db = store.database;
  await store.command(`CREATE TABLE IF NOT EXISTS ${db}.${inputTable(table)} AS ${db}.${inputTable(EVENTS_TABLE)}`);
  await store.command(
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.${inputView(table)} TO ${db}.${table} AS SELECT * FROM ${db}.${inputTable(table)}`,
  );
}

/** Throws STORE_QUERY_FAILED (held, retried) when `table`'s input view is missing. */
export async function checkEventsInput(store: Store, table: string): Promise<void> {
  const [row] = await store.query<{ n: string }>(
    `SELECT count() AS n FROM system.tables
     WHERE database = {db:String} AND name = {view:String} AND engine = 'MaterializedView'`,
    { db: store.database, view: inputView(table) },
  );
  if (Number(row?.n) === 0)
    throw new HooklogError(
      'STORE_QUERY_FAILED',
      `${store.database}.${inputView(table)} is missing: rows inserted into ${inputTable(table)} would reach no ` +
        `table, so the sink holds its batches; restore it (migration 013) and they land`,
    );
}
