/**
 * What a stream → table pipeline is: which table a topic feeds and how its records become rows, as
 * objects (inserted as JSONEachRow) or as TabSeparated bytes. The writer (table-writer.ts) and the
 * encodings (table-rows.ts) both read these.
 */
import type { ConsumedRecord } from '../stream/types.js';
import type { Store } from './store.js';
import type { TsvWriter } from './tsv.js';

export type MapResult<Row> = { readonly ok: true; readonly row: Row } | { readonly ok: false; readonly reason: string };

/** Which table a topic feeds and how its records become rows (objects, inserted as JSONEachRow). */
export interface Pipeline {
  readonly table: string;
  readonly map: (rec: ConsumedRecord) => MapResult<object>;
  /**
   * What happens to a record that cannot be inserted: re-routed to the
   * deadletter topic, or (for the deadletter topic itself, which must not
   * feed itself) logged and skipped.
   */
  readonly onReject: 'deadletter' | 'drop';
  /**
   * Records that are not the topic's data and become no row (a compacted topic's sync records, which the Kafka
   * stream appends to read it to its end): passed over, committed with the batch.
   */
  readonly skip?: (rec: ConsumedRecord) => boolean;
}

/**
 * A pipeline whose records are written as TabSeparated bytes (tsv.ts) rather than objects: for the
 * events, where the JavaScript cost per record decides how fast the sink drains.
 */
export interface TsvPipeline {
  /** The table the rows are for (named in telemetry and logs). */
  readonly table: string;
  /**
   * Where they are inserted, when not `table` itself (a Null table whose view writes `table`). Every table a
   * view writes from the insert drops a repeated dedup token too (Store.insertTsv).
   */
  readonly insertInto?: string;
  /** Run before and after each insert into `insertInto`; a throw fails the batch (held, offered again). */
  readonly beforeInsert?: (store: Store) => Promise<void>;
  readonly afterInsert?: (store: Store) => Promise<void>;
  /** The table's columns in the order `encode` writes each row's fields. */
  readonly columns: readonly string[];
  /** Appends the record's row to `rows`: null when written, else why it cannot be inserted (writing nothing). */
  readonly encode: (rec: ConsumedRecord, rows: TsvWriter) => string | null;
  readonly onReject: 'deadletter' | 'drop';
  /** The insert folds copies within a block (Store TsvInsertOptions.foldOnInsert). Default true. */
  readonly foldOnInsert?: boolean;
}
