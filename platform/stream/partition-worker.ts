import { RetryPolicies, backoffDelay, sleep, type RetryPolicy } from '../retry.js';
import type { ConsumedRecord, RecordBatch } from './types.js';

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
 * - the buffer is bounded: above `maxBufferedRecords` fetching pauses.
 */
export class PartitionWorker {
  readonly #o: PartitionWorkerOptions;
  #buffer: ConsumedRecord[] = [];
  #firstArrival = 0;
  #paused = false;
  #revoked = false;
  #stopping = false;
  #wake: (() => void) | null = null;
  readonly #stopController = new AbortController();
  readonly #done: Promise<void>;

  constructor(opts: PartitionWorkerOptions) {
    this.#o = opts;
    this.#done = this.#run();
  }

  get buffered(): number {
    return this.#buffer.length;
  }

  /** Records fetched for this partition, in offset order, continuing where the last push ended. */
  push(records: readonly ConsumedRecord[]): void {
    if (this.#revoked || this.#stopping || records.length === 0) return;
    if (this.#buffer.length === 0) this.#firstArrival = Date.now();
    for (const r of records) this.#buffer.push(r);
    if (!this.#paused && this.#buffer.length >= this.#o.maxBufferedRecords) {
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
      const age = Date.now() - this.#firstArrival;
      if (this.#buffer.length < maxBatchRecords && age < maxBatchWaitMs && !this.#stopping) {
        await this.#waitForSignal(maxBatchWaitMs - age);
        continue;
      }
      const records = this.#buffer.splice(0, maxBatchRecords);
      this.#firstArrival = this.#buffer.length > 0 ? Date.now() : 0;
      const first = records[0]!;
      const last = records[records.length - 1]!;
      const batch: RecordBatch = {
        topic: this.#o.topic,
        partition: this.#o.partition,
        records,
        firstOffset: first.offset,
        lastOffset: last.offset,
      };
      if (!(await this.#handle(batch))) return;
      if (this.#revoked) return;
      await this.#o.commit(last.offset + 1);
      if (this.#paused && this.#buffer.length <= this.#o.maxBufferedRecords / 2) {
        this.#paused = false;
        this.#o.resume();
      }
    }
  }

  /** True when the handler succeeded; false when revoked or stopped while it kept failing. */
  async #handle(batch: RecordBatch): Promise<boolean> {
    const policy = this.#o.retryPolicy ?? RetryPolicies.sink;
    for (let attempt = 1; ; attempt++) {
      try {
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
