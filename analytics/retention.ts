/**
 * Retention as configuration: `store.retention_days` becomes the events
 * table's TTL at start-up (0 removes it), so changing it needs no migration.
 * ClickHouse drops whole expired parts as merges reach them (the TTL is on
 * `published`, the partition key's column, so old daily partitions go whole).
 */
import { EVENTS_TABLE } from '../schemas/tables.js';
import type { Store } from '../platform/store/index.js';

export async function applyRetention(store: Store, days: number, table = EVENTS_TABLE): Promise<void> {
  const t = `${store.database}.${table}`;
  if (!Number.isInteger(days) || days < 0)
    throw new RangeError(`retention_days must be a whole number ≥ 0, got ${days}`);
  if (days === 0) {
    const [row] = await store.query<{ q: string }>(
      'SELECT create_table_query AS q FROM system.tables WHERE database = {db:String} AND name = {t:String}',
      { db: store.database, t: table },
    );
    if (row && / TTL /.test(row.q)) await store.command(`ALTER TABLE ${t} REMOVE TTL`);
    return;
  }
  // materialize_ttl_after_modify = 0: apply to new and merged parts, without rewriting every part now.
  await store.command(
    `ALTER TABLE ${t} MODIFY TTL toDateTime(published) + toIntervalDay(${days}) SETTINGS materialize_ttl_after_modify = 0`,
  );
}
