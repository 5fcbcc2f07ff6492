/**
 * The sink's internal events: one function each, which logs through a child
 * logger bound to `component: clickhouse-sink` and bumps a counter. Only our
 * own values are bound (topic, partition, offsets, counts, reasons we wrote),
 * never fields of the payload. Each also feeds the process's Prometheus
 * registry (labels: table, and the error code of refusals); the plain
 * counters stay for tests and the stop log line.
 */
import type { Logger } from '../log.js';
import { counter, histogram } from '../metrics.js';

const m = {
  rowsInserted: counter({
    name: 'hooklog_sink_rows_inserted_total',
    help: 'Rows ClickHouse confirmed (repeats it dropped by dedup token included).',
    labelNames: ['table'],
  }),
  rejected: counter({
    name: 'hooklog_sink_rows_rejected_total',
    help: 'Records that can never be inserted, by error code (RECORD_INVALID, STORE_REJECTED_ROW).',
    labelNames: ['table', 'code'],
  }),
  deadLettered: counter({
    name: 'hooklog_sink_rows_dead_lettered_total',
    help: 'Refused records sent to the deadletter topic with their bytes.',
    labelNames: ['table'],
  }),
  dropped: counter({
    name: 'hooklog_sink_dead_letters_dropped_total',
    help: 'Dead letters the deadletter table refused: logged and skipped.',
    labelNames: ['table'],
  }),
  retries: counter({
    name: 'hooklog_sink_insert_retries_total',
    help: 'Inserts retried after a failure that may pass (store down, overloaded).',
    labelNames: ['table'],
  }),
  planErrors: counter({
    name: 'hooklog_sink_batch_plan_errors_total',
    help: 'Failed reads or writes of batch plans (sink_batches), retried: the store is down or refusing.',
    labelNames: ['topic', 'op'],
  }),
  batchFailures: counter({
    name: 'hooklog_sink_batch_failures_total',
    help: 'Batches whose handling failed and will be offered again.',
    labelNames: ['topic'],
  }),
  insertSeconds: histogram({
    name: 'hooklog_sink_insert_duration_seconds',
    help: 'Time for ClickHouse to confirm one insert, retries included.',
    labelNames: ['table'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  }),
  batchRecords: histogram({
    name: 'hooklog_sink_batch_records',
    help: 'Records per batch handed to the sink.',
    labelNames: ['table'],
    buckets: [1, 10, 50, 100, 500, 1000, 2500, 5000, 10_000],
  }),
  freshness: histogram({
    name: 'hooklog_sink_freshness_seconds',
    help: 'From receipt by hooklog (hooklog-received-at) to the row confirmed in ClickHouse.',
    labelNames: ['table'],
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600],
  }),
};

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
    inserted(
      w: Where,
      table: string,
      firstOffset: number,
      lastOffset: number,
      rows: number,
      ms: number,
      receivedMs: readonly number[] = [],
    ): void {
      counters.inserts++;
      counters.rowsInserted += rows;
      m.rowsInserted.inc({ table }, rows);
      m.insertSeconds.observe({ table }, ms / 1000);
      const now = Date.now();
      for (const t of receivedMs) m.freshness.observe({ table }, Math.max(0, now - t) / 1000);
      log.debug({ ...w, table, first_offset: firstOffset, last_offset: lastOffset, rows, ms }, 'sink_inserted');
    },
    insertRetry(w: Where, table: string, err: unknown, attempt: number, delayMs: number): void {
      counters.insertRetries++;
      m.retries.inc({ table });
      // Every retry holds the partition's offsets back: warn from the first one.
      log.warn({ ...w, attempt, delay_ms: delayMs, err }, 'sink_insert_retry');
    },
    /** `why` is the error's type, not its message: ClickHouse quotes the offending input. */
    bisected(w: Where, firstOffset: number, lastOffset: number, rows: number, why: string): void {
      counters.bisections++;
      log.warn(
        { ...w, first_offset: firstOffset, last_offset: lastOffset, rows, why },
        'sink_insert_rejected_bisecting',
      );
    },
    /** A record that can never be inserted; `reason` starts with its error code. */
    rejected(table: string, reason: string): void {
      m.rejected.inc({ table, code: /^[A-Z_]+(?=:)/.exec(reason)?.[0] ?? 'RECORD_INVALID' });
    },
    deadLettered(w: Where, table: string, offset: number, reason: string): void {
      counters.deadLettered++;
      m.deadLettered.inc({ table });
      log.warn({ ...w, offset, reason }, 'sink_record_dead_lettered');
    },
    dropped(w: Where, table: string, offset: number, reason: string): void {
      counters.dropped++;
      m.dropped.inc({ table });
      log.error({ ...w, offset, reason }, 'sink_dead_letter_dropped');
    },
    batchDone(w: Where, table: string, firstOffset: number, lastOffset: number, records: number, ms: number): void {
      counters.batches++;
      m.batchRecords.observe({ table }, records);
      log.debug({ ...w, first_offset: firstOffset, last_offset: lastOffset, records, ms }, 'sink_batch_done');
    },
    planFailed(w: Where, op: 'load' | 'record', err: unknown): void {
      counters.planErrors++;
      m.planErrors.inc({ topic: w.topic, op });
      log.warn({ ...w, op, err }, 'sink_batch_plan_failed');
    },
    handlerFailed(w: Where, err: unknown, attempt: number): void {
      counters.handlerErrors++;
      m.batchFailures.inc({ topic: w.topic });
      log.error({ ...w, attempt, err }, 'sink_batch_failed');
    },
  };
}
