/**
 * The raw event stored three ways on the same sample of rows: String with
 * ZSTD(3), String with ZSTD(6) (what 005 uses), and the JSON type. Same
 * ordering key as the events table, merged to one part each, then compared.
 */
import type { Store } from '../../platform/store/index.js';
import { tableBytes } from './measure.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

export async function compareRawStorage(store: Store, sample: number): Promise<string[]> {
  const db = store.database;
  const variants: Array<[string, string]> = [
    ['raw_zstd3', 'String CODEC(ZSTD(3))'],
    ['raw_zstd6', 'String CODEC(ZSTD(6))'],
    ['raw_json', 'JSON'],
  ];
  const lines = [`raw JSON storage, ${sample} events (bytes/event on disk, the raw column only):`];
  for (const [name, type] of variants) {
    await store.command(`DROP TABLE IF EXISTS ${db}.${name}`);
    await store.command(
      `CREATE TABLE ${db}.${name} (org LowCardinality(String), event_type LowCardinality(String), published DateTime64(3, 'UTC'), uuid String, raw ${type}) ENGINE = MergeTree ORDER BY (org, event_type, published, uuid)`,
    );
    const t = performance.now();
    await store.command(
      `INSERT INTO ${db}.${name} SELECT org, event_type, published, uuid, raw FROM ${db}.${EVENTS_TABLE} LIMIT {n:UInt32}`,
      { n: sample },
    );
    await store.command(`OPTIMIZE TABLE ${db}.${name} FINAL`);
    const ms = performance.now() - t;
    const [c] = await store.query<{ b: string }>(
      "SELECT sum(data_compressed_bytes) AS b FROM system.parts_columns WHERE database = {db:String} AND table = {t:String} AND active AND column LIKE 'raw%'",
      { db, t: name },
    );
    const whole = await tableBytes(store, name);
    lines.push(
      `  ${type.padEnd(22)} raw ${(Number(c!.b) / whole.rows).toFixed(1)} bytes/event, table ${(whole.bytes / whole.rows).toFixed(1)}; load+merge ${(ms / 1000).toFixed(1)} s`,
    );
    await store.command(`DROP TABLE ${db}.${name}`);
  }
  return lines;
}
