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
  /** TSV rows: the row's bytes in the batch's buffer. */
  readonly from: number;
  readonly to: number;
}

export interface BatchRows {
  /** The records that became rows, in offset order. */
  readonly items: readonly Item[];
  /** The records that could not, with why. */
  readonly refused: ReadonlyArray<{ readonly rec: ConsumedRecord; readonly reason: string }>;
  /** Inserts `items` (a run of consecutive `this.items`) into the pipeline's table as one block. */
  insert(store: Store, items: readonly Item[], token: string): Promise<void>;
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
      if (pipeline.skip?.(rec)) continue;
      if (rec.value.length > maxBytes) refused.push({ rec, reason: tooLarge(rec) });
      else {
        const mapped = pipeline.map(rec);
        if (mapped.ok) items.push({ rec, row: mapped.row, from: 0, to: 0 });
        else refused.push({ rec, reason: mapped.reason });
      }
    }
    return {
      items,
      refused,
      insert: (store, run, token) =>
        store.insertJson(
          pipeline.table,
          run.map((i) => i.row!),
          { dedupToken: token },
        ),
    };
  }

  // A row is about the size of its record plus the columns taken out of it (an event's are some 600 bytes):
  // sized so it rarely grows, and no larger, as each partition in flight holds one.
  let bytes = 0;
  for (const rec of records) bytes += rec.value.length;
  const rows = new TsvWriter(4096 + bytes + records.length * 768);
  for (const rec of records) {
    if (rec.value.length > maxBytes) {
      refused.push({ rec, reason: tooLarge(rec) });
      continue;
    }
    const from = rows.length;
    const reason = pipeline.encode(rec, rows);
    if (reason === null) items.push({ rec, row: null, from, to: rows.length });
    else {
      // The encoder writes nothing for a record it refuses; make sure of it.
      rows.truncate(from);
      refused.push({ rec, reason });
    }
  }
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
  };
}
