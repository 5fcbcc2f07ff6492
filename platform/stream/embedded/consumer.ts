/**
 * Consuming from the embedded log. The group is a single process: one consumer
 * owns every partition of its topic, so there is no rebalancing; each partition
 * gets a reader that tails the log from the committed position and feeds a
 * PartitionWorker, which batches, calls the handler and commits in order.
 */
import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import { RetryPolicies, backoffDelay, sleep } from '../../retry.js';
import type { LagWatch } from '../lag.js';
import { PartitionWorker } from '../partition-worker.js';
import type { ConsumeOptions, Consumer, TopicSpec } from '../types.js';
import type { EmbeddedLog } from './log.js';
import { PartitionReader } from './reader.js';

export interface ConsumerDeps {
  /** Where the partitions' pending records are shown as consumer lag. */
  readonly lag: LagWatch;
  readonly log: EmbeddedLog;
  readonly spec: TopicSpec;
  readonly opts: ConsumeOptions;
  /** The group's committed positions in the topic (partitions absent start at 0). */
  readonly committed: ReadonlyMap<number, number>;
  /** Durably records the group's position in a partition. */
  readonly commit: (partition: number, next: number) => Promise<void>;
  readonly logger: Logger;
  /** Called once the consumer has fully stopped. */
  readonly onStopped: () => void;
}

export class EmbeddedConsumer implements Consumer {
  readonly #feeds: PartitionFeed[];
  /** One per partition: a shared signal would collect a listener per partition and trip Node's leak warning. */
  readonly #aborts: AbortController[];
  readonly #onStopped: () => void;
  readonly #partitions: readonly number[];
  readonly #onRevoked: ((partitions: readonly number[]) => void) | undefined;
  #stopped: Promise<void> | null = null;

  constructor(d: ConsumerDeps) {
    this.#onStopped = d.onStopped;
    const logger = d.logger.child({ topic: d.spec.name, group: d.opts.group });
    this.#aborts = Array.from({ length: d.spec.partitions }, () => new AbortController());
    this.#feeds = this.#aborts.map((a, partition) => new PartitionFeed(d, partition, logger, a.signal));
    this.#partitions = this.#feeds.map((_, p) => p);
    this.#onRevoked = d.opts.onRevoked;
    // The group is this process: every partition is ours from the start until stop.
    d.opts.onAssigned?.(this.#partitions);
  }

  /** Records fetched and not yet handed to the handler, over all partitions (bounded by back-pressure). */
  get bufferedRecords(): number {
    return this.#feeds.reduce((n, f) => n + f.worker.buffered, 0);
  }

  /** Stops reading, lets the workers hand over and commit what is buffered, then ends. Idempotent. */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      for (const a of this.#aborts) a.abort();
      await Promise.all(this.#feeds.map((f) => f.done));
      await Promise.all(this.#feeds.map((f) => f.worker.stop()));
      this.#onRevoked?.(this.#partitions);
      this.#onStopped();
    })();
    return this.#stopped;
  }
}

/** One partition: a reader loop pushing into a worker, honouring the worker's pause/resume. */
class PartitionFeed {
  readonly worker: PartitionWorker;
  readonly done: Promise<void>;
  readonly #log: EmbeddedLog;
  readonly #reader: PartitionReader;
  readonly #logger: Logger;
  readonly #signal: AbortSignal;
  /** Records per read: small enough that a pause takes effect close to the buffer limit. */
  readonly #readRecords: number;
  #paused = false;
  #resumed: (() => void) | null = null;

  constructor(d: ConsumerDeps, partition: number, logger: Logger, signal: AbortSignal) {
    const { opts } = d;
    this.#log = d.log;
    this.#logger = logger.child({ partition });
    this.#signal = signal;
    const maxBuffered = opts.maxBufferedRecords ?? 10_000;
    this.#readRecords = Math.max(1, Math.ceil(maxBuffered / 2));
    this.#reader = new PartitionReader(d.log, d.spec.name, partition, d.committed.get(partition) ?? 0);
    this.worker = new PartitionWorker({
      topic: d.spec.name,
      partition,
      handler: opts.handler,
      maxBatchRecords: opts.maxBatchRecords ?? 1000,
      maxBatchWaitMs: opts.maxBatchWaitMs ?? 1000,
      maxBufferedRecords: maxBuffered,
      // A failed commit is logged, not thrown: the position is committed again with
      // the next batch, and until then a restart re-delivers (never skips) records.
      commit: (next) =>
        d
          .commit(partition, next)
          .catch((err: unknown) => this.#logger.warn({ err, next }, 'embedded stream: commit failed')),
      pause: () => {
        this.#paused = true;
      },
      resume: () => {
        this.#paused = false;
        this.#resumed?.();
      },
      ...(opts.onHandlerError ? { onHandlerError: opts.onHandlerError } : {}),
      ...(opts.batchPlans ? { plans: opts.batchPlans } : {}),
    });
    d.lag.setWorker(partition, this.worker);
    this.done = this.#run();
  }

  async #run(): Promise<void> {
    let failures = 0;
    try {
      while (!this.#signal.aborted && !this.#log.closed) {
        if (this.#paused) {
          await this.#untilResumed();
          continue;
        }
        const version = this.#log.version;
        try {
          const want = this.#reader.nextOffset;
          const { records, atEnd } = await this.#reader.read(this.#readRecords);
          failures = 0;
          const first = records[0];
          if (first && first.offset > want) {
            this.#logger.warn(
              { from: want, to: first.offset - 1 },
              'embedded stream: records past retention were deleted before they were consumed',
            );
          }
          this.worker.push(records);
          if (atEnd) await this.#log.waitForAppend(version, this.#signal);
        } catch (err) {
          // Reading can only fail on damage or I/O errors: say so loudly and try again,
          // never skip past what could not be read.
          failures++;
          this.#logger.error({ err, failures }, `embedded stream: read failed: ${errorMessage(err)}`);
          await sleep(backoffDelay(RetryPolicies.sink, failures), this.#signal);
        }
      }
    } finally {
      await this.#reader.close();
    }
  }

  #untilResumed(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#resumed = null;
        this.#signal.removeEventListener('abort', done);
        resolve();
      };
      if (!this.#paused || this.#signal.aborted) return resolve();
      this.#resumed = done;
      this.#signal.addEventListener('abort', done, { once: true });
    });
  }
}
