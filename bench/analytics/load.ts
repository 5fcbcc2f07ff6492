/**
 * Loads generated events the way the sink does: each event serialised, encoded by
 * consumers/clickhouse-sink/event-tsv.ts (rows.ts's columns) and inserted as TabSeparated rows through the
 * events table's input (`EVENTS_TABLE`_input and its view, migration 013). No stream in between: this
 * measures the store. The events came by no delivery path (no `hooklog-source`), so ClickHouse writes no
 * arrivals for them (migration 032): what coverage reads is planted where a test needs it (analytics/testing.ts).
 */
import { EVENT_COLUMNS, encodeEvent } from '../../consumers/clickhouse-sink/event-tsv.js';
import { inputTable } from '../../consumers/clickhouse-sink/events-input.js';
import { Header } from '../../platform/stream/headers.js';
import { ENRICHMENT_HEADER, encodeEnrichment, type Enrichment } from '../../platform/enrichment/enrichment.js';
import type { Store } from '../../platform/store/index.js';
import { TsvWriter } from '../../platform/store/tsv.js';
import type { Generated } from './generate.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

/** Encodes and inserts one chunk; returns the raw JSON bytes it carried. */
export async function insertChunk(
  store: Store,
  chunk: ReadonlyArray<Generated & { readonly enrichment?: Enrichment }>,
  table = EVENTS_TABLE,
): Promise<number> {
  const rows = new TsvWriter(chunk.length * 2500);
  let bytes = 0;
  const now = new Date().toISOString();
  for (const [i, g] of chunk.entries()) {
    const value = Buffer.from(JSON.stringify(g.event));
    bytes += value.length;
    const refused = encodeEvent(
      {
        topic: 'bench.logs',
        partition: 0,
        offset: i,
        key: g.org,
        value,
        timestamp: Date.now(),
        headers: {
          [Header.org]: g.org,
          [Header.hookId]: 'bench',
          [Header.deliveryId]: 'bench',
          [Header.receivedAt]: now,
          // As the stream wrapper adds it on append (platform/enrichment/stream.ts).
          ...(g.enrichment ? { [ENRICHMENT_HEADER]: encodeEnrichment(g.enrichment)! } : {}),
        },
      },
      rows,
    );
    if (refused !== null) throw new Error(`generated event refused by the mapping: ${refused}`);
  }
  await store.insertTsv(inputTable(table), EVENT_COLUMNS, rows.view(), { foldOnInsert: false });
  return bytes;
}

/**
 * Multiplies the data inside ClickHouse: `copies` more orgs, each a copy of the
 * generated ones under a new org name (`<org>-copy<c>`) with fresh uuids (in
 * the column and inside `raw`). The generated orgs keep their own size.
 */
export async function copyOrgs(store: Store, copies: number): Promise<void> {
  const cols = (
    await store.query<{ name: string }>(
      `SELECT name FROM system.columns WHERE database = {db:String} AND table = {t:String} ORDER BY position`,
      { db: store.database, t: EVENTS_TABLE },
    )
  ).map((c) => c.name);
  const select = cols.map((c) =>
    c === 'org'
      ? "concat(org, '-copy', toString({c:UInt32})) AS org"
      : c === 'uuid'
        ? 'u AS uuid'
        : c === 'raw'
          ? 'replaceOne(raw, uuid, u) AS raw'
          : c,
  );
  for (let c = 1; c <= copies; c++) {
    await store.command(
      `INSERT INTO ${store.database}.${EVENTS_TABLE} (${cols.join(', ')}) SELECT ${select.join(', ')} FROM (SELECT *, toString(generateUUIDv4()) AS u FROM ${store.database}.${EVENTS_TABLE} WHERE NOT org LIKE '%-copy%')`,
      { c },
    );
  }
}
