import { RetryPolicies, backoffDelay, sleep, type RetryPolicy } from '../retry.js';
import type { BatchPlans, BatchRange, ConsumedRecord, RecordBatch } from './types.js';

export interface PartitionWorkerOptions {
  readonly topic: string;
  readonly partition: number;
  readonly handler: (batch: RecordBatch) => Promise<void>;
  readonly maxBatchRecords: number;
  readonly maxBatchWaitMs: number;
  readonly maxBufferedRecords: number;
  /** Persist the group's position: `nextOffset` is the offset after the last processed record. */
  readonly commit: (nextOffset: number) => Promise<void>;
  /** Fetching for this partition must pause (buffer full) / may resume (buffer half empty). */
  readonly pause: () => void;
  readonly resume: () => void;
  readonly onHandlerError?: (err: unknown, batch: RecordBatch, attempt: number) => void;
  readonly retryPolicy?: RetryPolicy;
  /** Deterministic batches (see ConsumeOptions.batchPlans). */
  readonly plans?: BatchPlans;
}

/**
 * Owns one assigned partition on the consuming side, for both stream kinds.
 *
 * Invariants, each of which the consumers' promise rests on:
 * - batches are handed to the handler one at a time, in offset order, so the
 *   committed position only ever covers a contiguous, processed prefix;
 * - a batch whose handler throws is offered again (capped backoff), never skipped;
 * - after `revoke()` nothing is committed for this partition, even if an
 *   in-flight handler finishes later: another member may own it by then;
 * - the buffer is bounded: above `maxBufferedRecords` fetching pauses;
 * - batches are cut when full, or when `maxBatchWaitMs` has passed since the
 *   previous cut: at most one partial batch per interval, and none waits for
 *   an interval that already passed while the partition was idle;
 * - with `plans`, batches are deterministic: each batch's range is recorded
 *   before the handler sees it, and a worker starting at the committed
 *   position first re-cuts the recorded ranges exactly (waiting for all their
 *   records, whatever size and time say), so a batch handled but not
 *   committed before a crash is handed over again as the very same batch.
 */
export class PartitionWorker {
  readonly #o: PartitionWorkerOptions;
  #buffer: ConsumedRecord[] = [];
  /** When the previous batch was cut (0: none yet). The time cut counts from here, not from arrival. */
  #lastCut = 0;
  #paused = false;
  #revoked = false;
  #stopping = false;
  #wake: (() => void) | null = null;
  /** The batch being handled (until committed), for lag. */
  #inFlight: RecordBatch | null = null;
  /** Recorded ranges not yet handled, in order; null until loaded (only with `plans`). */
  #plans: BatchRange[] | null = null;
  readonly #stopController = new AbortController();
  readonly #done: Promise<void>;

  constructor(opts: PartitionWorkerOptions) {
    this.#o = opts;
    this.#done = this.#run();
  }

  get buffered(): number {
    return this.#buffer.length;
  }

  /** Append time of the oldest record handed over or buffered and not yet committed (consumer lag). */
  get oldestPendingTimestamp(): number | null {
    return (this.#inFlight?.records[0] ?? this.#buffer[0])?.timestamp ?? null;
  }

  /** Records fetched for this partition, in offset order, continuing where the last push ended. */
  push(records: readonly ConsumedRecord[]): void {
    if (this.#revoked || this.#stopping || records.length === 0) return;
    for (const r of records) this.#buffer.push(r);
    if (!this.#paused && this.#buffer.length >= this.#o.maxBufferedRecords && this.#planSatisfied()) {
      this.#paused = true;
      this.#o.pause();
    }
    this.#notify();
  }

  /** The partition was taken away: drop what is buffered and never commit for it again. */
  async revoke(): Promise<void> {
    this.#revoked = true;
    this.#buffer = [];
    this.#stopController.abort();
    this.#notify();
    await this.#done;
  }

  /** Graceful stop: hand over what is buffered once more, commit it, then end. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#stopController.abort();
    this.#notify();
    await this.#done;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  #waitForSignal(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = null;
        resolve();
      }, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async #run(): Promise<void> {
    const { maxBatchRecords, maxBatchWaitMs } = this.#o;
    while (!this.#revoked) {
      if (this.#buffer.length === 0) {
        if (this.#stopping) return;
        await this.#waitForSignal(60_000);
        continue;
      }
      if (this.#o.plans && this.#plans === null && !(await this.#loadPlans(this.#buffer[0]!.offset))) return;
      const plan = this.#currentPlan();
      let count: number;
      if (plan) {
        // Re-cutting a recorded batch: all of its records, no more, however long it takes.
        if (this.#buffer[this.#buffer.length - 1]!.offset < plan.last) {
          if (this.#stopping) return; // cannot complete it now: it stays uncommitted for the next start
          await this.#waitForSignal(60_000);
          continue;
        }
        count = this.#countUpTo(plan.last);
      } else {
        // The time cut limits how often a partition inserts, not how long a record waits: a
        // partial batch goes once maxBatchWaitMs has passed since the previous cut, so the first
        // records after a quiet spell go at once instead of lingering a full interval.
        const sinceCut = Date.now() - this.#lastCut;
        if (this.#buffer.length < maxBatchRecords && sinceCut < maxBatchWaitMs && !this.#stopping) {
          await this.#waitForSignal(maxBatchWaitMs - sinceCut);
          continue;
        }
        // A new batch never reaches into a recorded one further on.
        const next = this.#plans?.[0];
        count = Math.min(maxBatchRecords, next ? this.#countUpTo(next.first - 1) : maxBatchRecords);
      }
      const records = this.#buffer.splice(0, count);
      this.#lastCut = Date.now();
      const first = records[0]!;
      const last = records[records.length - 1]!;
      const batch: RecordBatch = {
        topic: this.#o.topic,
        partition: this.#o.partition,
        records,
        firstOffset: first.offset,
        lastOffset: last.offset,
      };
      this.#inFlight = batch;
      if (!(await this.#handle(batch, plan !== null))) return;
      if (plan) this.#plans!.shift();
      if (this.#revoked) return;
      await this.#o.commit(last.offset + 1);
      this.#inFlight = null;
      if (this.#paused && this.#buffer.length <= this.#o.maxBufferedRecords / 2) {
        this.#paused = false;
        this.#o.resume();
      }
    }
  }

  /** Records at the head of the buffer with offsets <= `last`. */
  #countUpTo(last: number): number {
    const i = this.#buffer.findIndex((r) => r.offset > last);
    return i === -1 ? this.#buffer.length : i;
  }

  /** The recorded range the head of the buffer belongs to, dropping ranges already behind it. */
  #currentPlan(): BatchRange | null {
    const plans = this.#plans;
    const head = this.#buffer[0];
    if (!plans || !head) return null;
    while (plans.length > 0 && plans[0]!.last < head.offset) plans.shift();
    const p = plans[0];
    return p && p.first <= head.offset ? p : null;
  }

  /** False while a recorded batch waits for records not yet buffered: pausing then would wait forever. */
  #planSatisfied(): boolean {
    const p = this.#currentPlan();
    return !p || this.#buffer[this.#buffer.length - 1]!.offset >= p.last;
  }

  /** Loads the recorded ranges from `from` on, retrying failures; false when revoked or stopped meanwhile. */
  async #loadPlans(from: number): Promise<boolean> {
    const policy = this.#o.retryPolicy ?? RetryPolicies.sink;
    for (let attempt = 1; ; attempt++) {
      try {
        this.#plans = [...(await this.#o.plans!.load(this.#o.partition, from))].sort((a, b) => a.first - b.first);
        return !this.#revoked;
      } catch (err) {
        void err; // the plan store reports its own failures; retried with the handler's backoff
        if (this.#revoked || this.#stopping) return false;
        await sleep(backoffDelay(policy, attempt), this.#stopController.signal);
        if (this.#revoked) return false;
      }
    }
  }

  /** True when the handler succeeded; false when revoked or stopped while it kept failing. */
  async #handle(batch: RecordBatch, recorded: boolean): Promise<boolean> {
    const policy = this.#o.retryPolicy ?? RetryPolicies.sink;
    for (let attempt = 1; ; attempt++) {
      try {
        if (!recorded && this.#o.plans) {
          // Recorded before the handler may write anything: a replay then cuts this very batch again.
          await this.#o.plans.record(this.#o.partition, { first: batch.firstOffset, last: batch.lastOffset });
          recorded = true;
        }
        await this.#o.handler(batch);
        return true;
      } catch (err) {
        this.#o.onHandlerError?.(err, batch, attempt);
        // Stopping while the handler fails: leave the batch uncommitted; it is
        // read again from the committed position on the next start.
        if (this.#revoked || this.#stopping) return false;
        await sleep(backoffDelay(policy, attempt), this.#stopController.signal);
        if (this.#revoked) return false;
      }
    }
  }
}
