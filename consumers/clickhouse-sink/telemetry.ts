/**
 * The sink's internal events: one function each, which logs through a child
 * logger bound to `component: clickhouse-sink` and bumps a counter. Only our
 * own values are bound (topic, partition, offsets, counts, reasons we wrote),
 * never fields of the payload. The counters are plain numbers for now; a
 * metrics registry can read them later without changing the call sites.
 */
import { errorMessage } from '../../platform/errors.js';
import type { Logger } from '../../platform/log.js';

export interface SinkCounters {
  /** Batches fully handled (inserted, dead-lettered, handler resolved). */
  batches: number;
  rowsInserted: number;
  inserts: number;
  insertRetries: number;
  /** Times a rejected insert was split in two. */
  bisections: number;
  /** Records sent to the deadletter topic (mapping or ClickHouse rejected them). */
  deadLettered: number;
  /** Dead letters the deadletter table itself refused: logged and skipped, never re-queued. */
  dropped: number;
  handlerErrors: number;
  /** Failed loads or records of batch plans (retried). */
  planErrors: number;
}

export interface Where {
  readonly topic: string;
  readonly partition: number;
}

export type SinkTelemetry = ReturnType<typeof createSinkTelemetry>;

export function createSinkTelemetry(logger: Logger) {
  const log = logger.child({ component: 'clickhouse-sink' });
  const counters: SinkCounters = {
    batches: 0,
    rowsInserted: 0,
    inserts: 0,
    insertRetries: 0,
    bisections: 0,
    deadLettered: 0,
    dropped: 0,
    handlerErrors: 0,
    planErrors: 0,
  };
  return {
    counters,
    started(topic: string, group: string, table: string): void {
      log.info({ topic, group, table }, 'sink_started');
    },
    stopped(): void {
      log.info({ counters }, 'sink_stopped');
    },
    inserted(w: Where, table: string, firstOffset: number, lastOffset: number, rows: number, ms: number): void {
      counters.inserts++;
      counters.rowsInserted += rows;
      log.debug({ ...w, table, first_offset: firstOffset, last_offset: lastOffset, rows, ms }, 'sink_inserted');
    },
    insertRetry(w: Where, err: unknown, attempt: number, delayMs: number): void {
      counters.insertRetries++;
      // Every retry holds the partition's offsets back: warn from the first one.
      log.warn({ ...w, attempt, delay_ms: delayMs, err: errorMessage(err) }, 'sink_insert_retry');
    },
    /** `why` is the error's type, not its message: ClickHouse quotes the offending input. */
    bisected(w: Where, firstOffset: number, lastOffset: number, rows: number, why: string): void {
      counters.bisections++;
      log.warn({ ...w, first_offset: firstOffset, last_offset: lastOffset, rows, why }, 'sink_insert_rejected_bisecting');
    },
    deadLettered(w: Where, offset: number, reason: string): void {
      counters.deadLettered++;
      log.warn({ ...w, offset, reason }, 'sink_record_dead_lettered');
    },
    dropped(w: Where, offset: number, reason: string): void {
      counters.dropped++;
      log.error({ ...w, offset, reason }, 'sink_dead_letter_dropped');
    },
    batchDone(w: Where, firstOffset: number, lastOffset: number, records: number, ms: number): void {
      counters.batches++;
      log.debug({ ...w, first_offset: firstOffset, last_offset: lastOffset, records, ms }, 'sink_batch_done');
    },
    planFailed(w: Where, op: 'load' | 'record', err: unknown): void {
      counters.planErrors++;
      log.warn({ ...w, op, err }, 'sink_batch_plan_failed');
    },
    handlerFailed(w: Where, err: unknown, attempt: number): void {
      counters.handlerErrors++;
      log.error({ ...w, attempt, err: errorMessage(err) }, 'sink_batch_failed');
    },
  };
}
