/**
 * A batch's records as rows ready to insert, in either of the two encodings a pipeline may use: objects
 * (inserted as JSONEachRow through the client) or TabSeparated bytes written once into one buffer (tsv.ts).
 * The writer (table-writer.ts) bisects and retries over `items` without knowing which.
 */
import type { ConsumedRecord } from '../stream/types.js';
import type { Store } from './store.js';
import type { Pipeline, TsvPipeline } from './pipeline.js';
import { TsvWriter } from './tsv.js';

/** One record that became a row, in offset order. */
export interface Item {
  readonly rec: ConsumedRecord;
  /** Object rows: the row. */
  readonly row: object | null;
  /** TSV rows: the row's bytes in the batch's buffer, and its companion row's (empty when it has none). */
  readonly from: number;
  readonly to: number;
  readonly companionFrom: number;
  readonly companionTo: number;
}

export interface BatchRows {
  /** The records that became rows, in offset order. */
  readonly items: readonly Item[];
  /** The records that could not, with why. */
  readonly refused: ReadonlyArray<{ readonly rec: ConsumedRecord; readonly reason: string }>;
  /** Inserts `items` (a run of consecutive `this.items`) into the pipeline's table as one block. */
  insert(store: Store, items: readonly Item[], token: string): Promise<void>;
  /** Inserts the companion rows of `items` as one block; false when they have none. */
  insertCompanion(store: Store, items: readonly Item[], token: string): Promise<boolean>;
}

function isTsv(p: Pipeline | TsvPipeline): p is TsvPipeline {
  return 'encode' in p;
}

/** The batch's rows; a record over `maxBytes` is refused unread. */
export function encodeBatch(
  pipeline: Pipeline | TsvPipeline,
  records: readonly ConsumedRecord[],
  maxBytes: number,
): BatchRows {
  const refused: Array<{ rec: ConsumedRecord; reason: string }> = [];
  const items: Item[] = [];
  const tooLarge = (rec: ConsumedRecord) =>
    `record of ${rec.value.length} bytes is over sink.max_record_bytes (${maxBytes})`;

  if (!isTsv(pipeline)) {
    for (const rec of records) {
      if (rec.value.length > maxBytes) refused.push({ rec, reason: tooLarge(rec) });
      else {
        const mapped = pipeline.map(rec);
        if (mapped.ok) items.push({ rec, row: mapped.row, from: 0, to: 0, companionFrom: 0, companionTo: 0 });
        else refused.push({ rec, reason: mapped.reason });
      }
    }
    const companion = pipeline.companion;
    return {
      items,
      refused,
      insert: (store, run, token) =>
        store.insertJson(
          pipeline.table,
          run.map((i) => i.row!),
          { dedupToken: token },
        ),
      insertCompanion: async (store, run, token) => {
        if (!companion) return false;
        const rows = run.map((i) => companion.map(i.rec, i.row!)).filter((r): r is object => r !== null);
        if (rows.length === 0) return false;
        await store.insertJson(companion.table, rows, { dedupToken: token });
        return true;
      },
    };
  }

  // A row is about the size of its record plus the columns taken out of it (an event's are some 600 bytes):
  // sized so it rarely grows, and no larger, as each partition in flight holds one.
  let bytes = 0;
  for (const rec of records) bytes += rec.value.length;
  const rows = new TsvWriter(4096 + bytes + records.length * 768);
  const companionRows = pipeline.companion ? new TsvWriter(Math.max(4096, records.length * 256)) : null;
  for (const rec of records) {
    if (rec.value.length > maxBytes) {
      refused.push({ rec, reason: tooLarge(rec) });
      continue;
    }
    const from = rows.length;
    const companionFrom = companionRows?.length ?? 0;
    const reason = pipeline.encode(rec, rows, companionRows);
    if (reason === null)
      items.push({ rec, row: null, from, to: rows.length, companionFrom, companionTo: companionRows?.length ?? 0 });
    else {
      // The encoder writes nothing for a record it refuses; make sure of it.
      rows.truncate(from);
      companionRows?.truncate(companionFrom);
      refused.push({ rec, reason });
    }
  }
  const companion = pipeline.companion;
  return {
    items,
    refused,
    insert: async (store, run, token) => {
      const body = rows.view(run[0]!.from, run[run.length - 1]!.to);
      await pipeline.beforeInsert?.(store);
      await store.insertTsv(pipeline.insertInto ?? pipeline.table, pipeline.columns, body, {
        dedupToken: token,
        foldOnInsert: pipeline.foldOnInsert ?? true,
      });
      await pipeline.afterInsert?.(store);
    },
    insertCompanion: async (store, run, token) => {
      if (!companion || !companionRows) return false;
      // Consecutive items' companion rows are one span, unless rows ClickHouse refused sit between them.
      const spans: Buffer[] = [];
      let start = -1;
      let end = -1;
      for (const i of run) {
        if (i.companionFrom === i.companionTo) continue;
        if (i.companionFrom !== end) {
          if (start >= 0) spans.push(companionRows.view(start, end));
          start = i.companionFrom;
        }
        end = i.companionTo;
      }
      if (start < 0) return false;
      spans.push(companionRows.view(start, end));
      const body = spans.length === 1 ? spans[0]! : Buffer.concat(spans);
      await store.insertTsv(companion.table, companion.columns, body, {
        dedupToken: token,
        foldOnInsert: pipeline.foldOnInsert ?? true,
      });
      return true;
    },
  };
}
