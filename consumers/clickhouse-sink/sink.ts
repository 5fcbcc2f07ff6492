/**
 * The ClickHouse sink: consumes `<prefix>.logs` into `{db}.events_v4` (read as the `events` view) and
 * `<prefix>.deadletter` into `{db}.deadletter`, exactly once per (org, uuid).
 *
 * How the promise holds, end to end:
 * - the stream's PartitionWorker hands over one partition's batch at a time
 *   and commits its offsets only when the handler resolves;
 * - the handler (`writeBatch`) resolves only when every record is in
 *   ClickHouse (insert confirmed, synchronous and fsynced) or durably in the
 *   deadletter topic; a retriable store failure is retried, never skipped;
 * - batches are deterministic: each batch's offset range is recorded in
 *   `{db}.sink_batches` (plans.ts) before it is inserted, and a restart from
 *   the committed position re-cuts the recorded ranges exactly; each insert
 *   carries `insert_deduplication_token = topic-partition-first-last`, so a
 *   batch redelivered after a crash (inserted, not yet committed) is the same
 *   insert with the same token, and ClickHouse drops it, in events_v4 and in
 *   arrivals (the views' tables: Store.insertTsv); duplicates from the
 *   identity service itself fold in the AggregatingMergeTree, keeping every
 *   value any copy knew (migration 011).
 */
import { HooklogError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log.js';
import type { Store } from '../../platform/store/index.js';
import type { Topics } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import type { RetryPolicy } from '../../platform/retry.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { sinkSchema } from './config.js';
import { ARRIVALS_TABLE, checkEventsInput, ensureEventsInput, inputTable } from './events-input.js';
import { clickHouseBatchPlans } from './plans.js';
import { EVENT_COLUMNS, encodeEvent } from './event-tsv.js';
import { mapDeadletterRecord } from './rows.js';
import { createSinkTelemetry, type SinkCounters } from '../../platform/store/table-writer-telemetry.js';
import {
  writeBatch,
  type ExtraPipeline,
  type Pipeline,
  type TsvPipeline,
  type WriterDeps,
} from '../../platform/store/table-writer.js';

export interface ClickHouseSinkOptions {
  readonly stream: Stream;
  readonly store: Store;
  /** From `topicNames(prefix)`: `logs` is read, `deadletter` is read and written. */
  readonly topics: Pick<Topics, 'logs' | 'deadletter'>;
  /**
   * Consumer group for the logs topic. The deadletter topic is read by
   * `<group>.deadletter`: one group per topic, because Kafka assignors expect
   * every member of a group to subscribe to the same topics.
   */
  readonly group: string;
  readonly logger: Logger;
  /** Largest insert. Default 5000. */
  readonly maxBatchRecords?: number;
  /** A partial batch is inserted once this long has passed since the partition's previous cut. Default 1000. */
  readonly maxBatchWaitMs?: number;
  /**
   * Table for events, in the store's database. Default `EVENTS_TABLE` (`events` is the deduplicating view over it);
   * tests point it at a variant shaped like it, which gets its own input table and view (events-input.ts).
   */
  readonly eventsTable?: string;
  /**
   * Which path brought each event, and when first (`arrivals`, migration 010), written by a view on the events
   * table (migration 032), not by the sink. For `EVENTS_TABLE` that view writes `arrivals`, the default and the
   * only value allowed; a variant `eventsTable` gets its own view into this table (a table shaped like
   * `arrivals`), or none when null.
   */
  readonly arrivalsTable?: string | null;
  /** Table for dead letters. Default `deadletter`. */
  readonly deadletterTable?: string;
  /** Read the deadletter topic into its table too. Default true. */
  readonly consumeDeadletter?: boolean;
  /** A record larger than this is dead-lettered (RECORD_INVALID) without an insert attempt. Default 1 MiB. */
  readonly maxRecordBytes?: number;
  /** Kafka: the most one fetch of the events topic brings per partition (config sink.fetch_max_bytes_per_partition). */
  readonly fetchMaxBytesPerPartition?: number;
  /** Backoff for store retries. Default RetryPolicies.sink (unbounded, capped). */
  readonly retryPolicy?: RetryPolicy;
  /**
   * More topics, each written into its own table by group `<group>.<name>`,
   * with the same guarantees (e.g. the token hook's decisions). The mapping
   * belongs to the component that defines the records.
   */
  readonly extraPipelines?: readonly ExtraPipeline[];
}

const DEFAULT_FETCH_BYTES = sinkSchema.parse({}).fetch_max_bytes_per_partition;

export interface ClickHouseSink {
  /** Stops fetching, abandons retries in progress (their batches stay uncommitted), commits finished batches. */
  stop(): Promise<void>;
  /** Live counters of the sink's internal events (see telemetry.ts). */
  readonly counters: Readonly<SinkCounters>;
}

/**
 * The events pipeline: TabSeparated bytes copied from the records (event-tsv.ts: rows.ts's columns, value
 * for value), the one pipeline whose cost per record decides how fast the sink drains. One insert per batch:
 * ClickHouse writes the arrivals rows from the events rows (`arrivals` not null: migration 032's view).
 */
export function eventsPipeline(table: string, arrivals: string | null): TsvPipeline {
  if (table === EVENTS_TABLE && arrivals !== ARRIVALS_TABLE)
    throw new HooklogError(
      'CONFIG_INVALID',
      `the arrivals of ${EVENTS_TABLE} are written into ${ARRIVALS_TABLE} by migration 032's view, not ${String(arrivals)}`,
    );
  // A variant table's input and views are made before its first insert (not at start: the store may be
  // down then, or the table not there yet), and again whenever the check after an insert finds a view gone.
  let ensured = table === EVENTS_TABLE;
  return {
    table,
    // Through a Null table and its view (migration 013): typed on whole columns there, not field by field.
    insertInto: inputTable(table),
    beforeInsert: async (store) => {
      if (ensured) return;
      await ensureEventsInput(store, table, arrivals);
      ensured = true;
    },
    afterInsert: async (store) => {
      try {
        await checkEventsInput(store, table, arrivals);
      } catch (err) {
        ensured = table === EVENTS_TABLE;
        throw err;
      }
    },
    columns: EVENT_COLUMNS,
    encode: encodeEvent,
    onReject: 'deadletter',
    // Both tables fold copies at merge time and under FINAL; a batch rarely holds two copies of one
    // event, so folding each block as it is written was work for nothing (about a sixth of the insert).
    foldOnInsert: false,
  };
}

/**
 * The consumer group the sink reads a pipeline's topic with: `group` for the
 * events, `<group>.<name>` for the others (`deadletter`, and each extra
 * pipeline by its name). One function, so whoever reads a pipeline's lag
 * (`hooklog status`) asks the group that actually commits.
 */
export function sinkGroup(group: string, pipeline: 'events' | 'deadletter' | (string & {})): string {
  return pipeline === 'events' ? group : `${group}.${pipeline}`;
}

export async function startClickHouseSink(opts: ClickHouseSinkOptions): Promise<ClickHouseSink> {
  const telemetry = createSinkTelemetry(opts.logger);
  const abort = new AbortController();
  const deps: WriterDeps = {
    store: opts.store,
    stream: opts.stream,
    deadletterTopic: opts.topics.deadletter,
    telemetry,
    signal: abort.signal,
    ...(opts.retryPolicy ? { retryPolicy: opts.retryPolicy } : {}),
    ...(opts.maxRecordBytes ? { maxRecordBytes: opts.maxRecordBytes } : {}),
  };
  const eventsTable = opts.eventsTable ?? EVENTS_TABLE;
  const plans: Array<{ topic: string; group: string; pipeline: Pipeline | TsvPipeline }> = [
    {
      topic: opts.topics.logs,
      group: sinkGroup(opts.group, 'events'),
      pipeline: eventsPipeline(eventsTable, opts.arrivalsTable === undefined ? ARRIVALS_TABLE : opts.arrivalsTable),
    },
  ];
  if (opts.consumeDeadletter ?? true) {
    plans.push({
      topic: opts.topics.deadletter,
      group: sinkGroup(opts.group, 'deadletter'),
      pipeline: { table: opts.deadletterTable ?? 'deadletter', map: mapDeadletterRecord, onReject: 'drop' },
    });
  }

  for (const extra of opts.extraPipelines ?? [])
    plans.push({ topic: extra.topic, group: sinkGroup(opts.group, extra.name), pipeline: extra });

  // Every topic's group joins at once: joined one after another, the sink's start-up was the sum of the joins.
  const started = await Promise.allSettled(
    plans.map(async (plan) => {
      const consumer = await opts.stream.consume({
        topic: plan.topic,
        group: plan.group,
        maxBatchRecords: opts.maxBatchRecords ?? 5000,
        maxBatchWaitMs: opts.maxBatchWaitMs ?? 1000,
        ...(plan.topic === opts.topics.logs
          ? { fetchMaxBytesPerPartition: opts.fetchMaxBytesPerPartition ?? DEFAULT_FETCH_BYTES }
          : {}),
        handler: (batch) => writeBatch(deps, plan.pipeline, batch),
        batchPlans: clickHouseBatchPlans({
          store: opts.store,
          group: plan.group,
          topic: plan.topic,
          signal: abort.signal,
          ...(opts.retryPolicy ? { retryPolicy: opts.retryPolicy } : {}),
          onError: (err, op, partition) => telemetry.planFailed({ topic: plan.topic, partition }, op, err),
        }),
        onHandlerError: (err, batch, attempt) =>
          telemetry.handlerFailed({ topic: batch.topic, partition: batch.partition }, err, attempt),
      });
      telemetry.started(plan.topic, plan.group, plan.pipeline.table);
      return consumer;
    }),
  );
  const consumers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    abort.abort();
    await Promise.allSettled(consumers.map((c) => c.stop()));
    throw failed.reason;
  }

  let stopping: Promise<void> | null = null;
  return {
    counters: telemetry.counters,
    stop() {
      stopping ??= (async () => {
        abort.abort();
        const results = await Promise.allSettled(consumers.map((c) => c.stop()));
        telemetry.stopped();
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
      })();
      return stopping;
    },
  };
}
