/**
 * Scratch tables for store tests: one of a random name in the store's database, and its row count. Shared by the
 * in-thread and on-a-thread store tests, which run the same statements against the two ways of opening chdb.
 */
import type { Store } from '../../platform/store/store.js';
import { randomName } from './wait.js';

export async function freshTable(
  store: Store,
  ddlColumns: string,
  engine = 'MergeTree ORDER BY tuple()',
): Promise<string> {
  const table = randomName('t');
  await store.command(`CREATE TABLE ${store.database}.${table} (${ddlColumns}) ENGINE = ${engine}`);
  return table;
}

export async function countRows(store: Store, table: string): Promise<number> {
  const [row] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.${table}`);
  return Number(row!.n);
}
