/**
 * Writes one partition batch into ClickHouse: the I/O half of the sink, with
 * its retry and rejection handling. The invariant it keeps for the sink:
 * `write` resolves only when every record of the batch is either confirmed in
 * ClickHouse or durably in the deadletter topic — so the offsets the stream
 * commits after it never cover a record that is nowhere.
 */
import { HooklogError, isRetriable, type ErrorCode } from '../errors.js';
import { RetryPolicies, retry, type RetryPolicy } from '../retry.js';
import type { Store } from './store.js';
import { parseTimestamp } from '../time.js';
import { Header, deadLetter } from '../stream/headers.js';
import { TRUNCATED_LETTER_BYTES } from '../stream/record-size.js';
import type { ConsumedRecord, RecordBatch, Stream } from '../stream/types.js';
import type { SinkTelemetry, Where } from './table-writer-telemetry.js';
import { encodeBatch, type BatchRows, type Item } from './table-rows.js';
import type { Pipeline, TsvPipeline } from './pipeline.js';

// Shared by the ClickHouse sink (consumers/clickhouse-sink) and every other stream → table writer
// (alerting's alerts table, and the sink's further pipelines that components define): so it lives on
// the ground floor, and components meet it here instead of in each other's files.

export type { MapResult, Pipeline, TsvPipeline } from './pipeline.js';

export interface WriterDeps {
  readonly store: Store;
  readonly stream: Stream;
  readonly deadletterTopic: string;
  readonly telemetry: SinkTelemetry;
  /** Aborted on stop: an insert being retried gives up, leaving its batch uncommitted. */
  readonly signal: AbortSignal;
  readonly retryPolicy?: RetryPolicy;
  /** A record value larger than this is dead-lettered without an insert attempt. Default 1 MiB. */
  readonly maxRecordBytes?: number;
}

/** The insert's identity: the same offset range of the same partition always yields the same token. */
export function dedupToken(topic: string, partition: number, firstOffset: number, lastOffset: number): string {
  return `${topic}-${partition}-${firstOffset}-${lastOffset}`;
}

/** A further topic → table pipeline of the sink (a component defines it; cli/ hands it to the sink). */
export interface ExtraPipeline extends Pipeline {
  /** Suffix of the consumer group; unique per sink. */
  readonly name: string;
  readonly topic: string;
}

export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

/**
 * Set on a dead letter whose value had to be cut short: the original size in bytes. A dead letter the
 * stream itself refuses (over Kafka's message.max.bytes, say) would block the partition forever, so it
 * is sent again holding only its leading TRUNCATED_LETTER_BYTES.
 */
export const TRUNCATED_HEADER = Header.truncatedFromBytes;

/** Name of the component in dead letters' origin header. */
export const ORIGIN = 'clickhouse-sink';

interface Rejected {
  readonly rec: ConsumedRecord;
  /** The error code the dead letter carries (header and reason). */
  readonly code: ErrorCode;
  /** Goes into the dead letter's reason header; may quote the payload (ClickHouse's messages do). */
  readonly reason: string;
  /** Safe to log: our own words, or ClickHouse's error type without its message. */
  readonly summary: string;
}

export async function writeBatch(
  deps: WriterDeps,
  pipeline: Pipeline | TsvPipeline,
  batch: RecordBatch,
): Promise<void> {
  const started = Date.now();
  const where: Where = { topic: batch.topic, partition: batch.partition };
  // What can never succeed is set aside at once, its reason led by the error code.
  const rows = encodeBatch(pipeline, batch.records, deps.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
  const rejected: Rejected[] = rows.refused.map(({ rec, reason }) => ({
    rec,
    code: 'RECORD_INVALID',
    reason: `RECORD_INVALID: ${reason}`,
    summary: `RECORD_INVALID: ${reason}`,
  }));
  await insertRange(deps, pipeline.table, rows, where, rows.items, rejected);
  await settleRejected(deps, pipeline, where, rejected);
  deps.telemetry.batchDone(
    where,
    pipeline.table,
    batch.firstOffset,
    batch.lastOffset,
    batch.records.length,
    Date.now() - started,
  );
}

/**
 * Inserts `items` (contiguous in offset order, minus records already refused)
 * as one block whose dedup token is their offset range. A retriable failure is
 * retried with the sink policy (unbounded, capped): giving up would mean
 * either committing past data that is not stored or dropping it. A rejection
 * of the data itself is never retried as is: the range is halved, each half
 * inserted with its own sub-range token, until the rows ClickHouse refuses are
 * single and can be set aside. Any other failure (unknown table, syntax,
 * access) propagates: the stream offers the batch again later, and the halves
 * already inserted are dropped as duplicates by their tokens.
 */
async function insertRange(
  deps: WriterDeps,
  table: string,
  rows: BatchRows,
  where: Where,
  items: readonly Item[],
  rejected: Rejected[],
): Promise<void> {
  if (items.length === 0) return;
  const first = items[0]!.rec.offset;
  const last = items[items.length - 1]!.rec.offset;
  const token = dedupToken(where.topic, where.partition, first, last);
  const started = Date.now();
  try {
    await retry(() => rows.insert(deps.store, items, token), {
      policy: deps.retryPolicy ?? RetryPolicies.sink,
      retriable: isRetriable,
      signal: deps.signal,
      onRetry: (err, attempt, delayMs) => deps.telemetry.insertRetry(where, table, err, attempt, delayMs),
    });
    const receivedMs = items.map((i) => parseTimestamp(i.rec.headers[Header.receivedAt]) ?? i.rec.timestamp);
    deps.telemetry.inserted(where, table, first, last, items.length, Date.now() - started, receivedMs);
  } catch (err) {
    if (!(err instanceof HooklogError && err.code === 'STORE_REJECTED_ROW')) throw err;
    if (items.length === 1) {
      // classifyClickHouseError's message starts "ClickHouse TYPE (code): …".
      rejected.push({
        rec: items[0]!.rec,
        code: err.code,
        reason: `${err.code}: ${err.message}`,
        summary: `${err.code}: ${err.message.split(':', 1)[0]}`,
      });
      return;
    }
    deps.telemetry.bisected(where, first, last, items.length, err.message.split(':', 1)[0]!);
    const mid = Math.ceil(items.length / 2);
    await insertRange(deps, table, rows, where, items.slice(0, mid), rejected);
    await insertRange(deps, table, rows, where, items.slice(mid), rejected);
  }
}

/**
 * Dead-letters the refused records (raw bytes, reason, origin, where they were
 * read), awaiting the append: the batch counts as handled only once they are
 * durable there. On the deadletter topic itself they are logged and skipped.
 */
async function settleRejected(
  deps: WriterDeps,
  pipeline: Pipeline | TsvPipeline,
  where: Where,
  rejected: Rejected[],
): Promise<void> {
  if (rejected.length === 0) return;
  rejected.sort((a, b) => a.rec.offset - b.rec.offset);
  for (const r of rejected) deps.telemetry.rejected(pipeline.table, r.reason);
  if (pipeline.onReject === 'drop') {
    for (const r of rejected) deps.telemetry.dropped(where, pipeline.table, r.rec.offset, r.summary);
    return;
  }
  const letters = rejected.map((r) =>
    deadLetter(
      r.rec.value,
      r.reason,
      ORIGIN,
      {
        ...r.rec.headers,
        [Header.originalTopic]: r.rec.topic,
        [Header.originalPartition]: String(r.rec.partition),
        [Header.originalOffset]: String(r.rec.offset),
      },
      r.rec.key,
      r.code,
    ),
  );
  try {
    await deps.stream.append(deps.deadletterTopic, letters);
  } catch (err) {
    // Retriable (stream down): the handler fails and the batch is offered again.
    if (isRetriable(err)) throw err;
    // Refused for what the letters are: send them one by one, any the stream still refuses cut short.
    for (const letter of letters) {
      try {
        await deps.stream.append(deps.deadletterTopic, [letter]);
      } catch (one) {
        if (isRetriable(one)) throw one;
        await deps.stream.append(deps.deadletterTopic, [
          {
            ...letter,
            value: letter.value.subarray(0, TRUNCATED_LETTER_BYTES),
            headers: { ...letter.headers, [TRUNCATED_HEADER]: String(letter.value.length) },
          },
        ]);
      }
    }
  }
  for (const r of rejected) deps.telemetry.deadLettered(where, pipeline.table, r.rec.offset, r.summary);
}
