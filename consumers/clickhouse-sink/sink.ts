/**
 * The ClickHouse sink: consumes `<prefix>.logs` into `{db}.events_v3` (read as the `events` view) and
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
 *   insert with the same token, and ClickHouse drops it; duplicates from the
 *   identity service itself fold in the AggregatingMergeTree, keeping every
 *   value any copy knew (migration 011).
 */
import type { Logger } from '../../platform/log.js';
import type { Store } from '../../platform/store/index.js';
import type { Topics } from '../../platform/stream/headers.js';
import type { Consumer, Stream } from '../../platform/stream/types.js';
import type { RetryPolicy } from '../../platform/retry.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { clickHouseBatchPlans } from './plans.js';
import { arrivalRow, mapDeadletterRecord, mapEventRecord } from './rows.js';
import { createSinkTelemetry, type SinkCounters } from '../../platform/store/table-writer-telemetry.js';
import { writeBatch, type ExtraPipeline, type Pipeline, type WriterDeps } from '../../platform/store/table-writer.js';

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
   * tests point it at a variant.
   */
  readonly eventsTable?: string;
  /**
   * Which path brought each event, and when first (`arrivals`, migration 010). Default `arrivals`; null: not written.
   */
  readonly arrivalsTable?: string | null;
  /** Table for dead letters. Default `deadletter`. */
  readonly deadletterTable?: string;
  /** Read the deadletter topic into its table too. Default true. */
  readonly consumeDeadletter?: boolean;
  /** A record larger than this is dead-lettered (RECORD_INVALID) without an insert attempt. Default 1 MiB. */
  readonly maxRecordBytes?: number;
  /** Backoff for store retries. Default RetryPolicies.sink (unbounded, capped). */
  readonly retryPolicy?: RetryPolicy;
  /**
   * More topics, each written into its own table by group `<group>.<name>`,
   * with the same guarantees (e.g. the token hook's decisions). The mapping
   * belongs to the component that defines the records.
   */
  readonly extraPipelines?: readonly ExtraPipeline[];
}

export interface ClickHouseSink {
  /** Stops fetching, abandons retries in progress (their batches stay uncommitted), commits finished batches. */
  stop(): Promise<void>;
  /** Live counters of the sink's internal events (see telemetry.ts). */
  readonly counters: Readonly<SinkCounters>;
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
  const plans: Array<{ topic: string; group: string; pipeline: Pipeline }> = [
    {
      topic: opts.topics.logs,
      group: sinkGroup(opts.group, 'events'),
      pipeline: {
        table: opts.eventsTable ?? EVENTS_TABLE,
        map: mapEventRecord,
        onReject: 'deadletter',
        ...(opts.arrivalsTable === null
          ? {}
          : { companion: { table: opts.arrivalsTable ?? 'arrivals', map: arrivalRow } }),
      },
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

  const consumers: Consumer[] = [];
  try {
    for (const plan of plans) {
      consumers.push(
        await opts.stream.consume({
          topic: plan.topic,
          group: plan.group,
          maxBatchRecords: opts.maxBatchRecords ?? 5000,
          maxBatchWaitMs: opts.maxBatchWaitMs ?? 1000,
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
        }),
      );
      telemetry.started(plan.topic, plan.group, plan.pipeline.table);
    }
  } catch (err) {
    abort.abort();
    await Promise.allSettled(consumers.map((c) => c.stop()));
    throw err;
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
