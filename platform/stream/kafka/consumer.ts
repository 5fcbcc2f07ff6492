/**
 * One consumer-group member reading one topic, feeding a PartitionWorker per
 * assigned partition. What kafkajs does underneath, and what we rely on
 * (read in node_modules/kafkajs/src/consumer/{runner,consumerGroup}.js,
 * offsetManager/index.js, for kafkajs 2.2.4):
 *
 * - Fetching is per partition from a "resolved" position. With
 *   eachBatchAutoResolve off, the position moves only when we call
 *   resolveOffset; a batch we leave unresolved is fetched again.
 * - A paused partition is left out of fetch requests and its data is dropped
 *   from responses already in flight, so a batch reaching eachBatch is one we
 *   may take. Pause state survives a rejoin (same consumerGroup object) but not
 *   a crash-restart (new object).
 * - Every rejoin builds a new offset manager: resolved positions are forgotten
 *   and fetching restarts at the broker-committed offset, also for partitions
 *   this member keeps. So a worker lives for exactly one generation: on any
 *   rebalance all workers are revoked (nothing more is committed for them) and
 *   fresh ones start from the committed offset. Records that were handled but
 *   not yet committed are handed over again — at-least-once, which the sinks'
 *   deterministic batches and uuid dedup absorb. A new worker waits for its
 *   predecessor's in-flight handler call, so one partition never has two
 *   handler calls at once.
 * - REBALANCING is emitted before kafkajs rejoins, CRASH when it gives up the
 *   membership, GROUP_JOIN after a new assignment: each ends the generation.
 *   A crash kafkajs does not restart itself gets a new kafkajs consumer
 *   (supervisor.ts), whose GROUP_JOIN starts a generation like any other.
 * - autoCommit is off; we commit only the PartitionWorker's contiguous processed
 *   prefix, via consumer.commitOffsets, which commits under kafkajs's current
 *   generation. The broker refuses a commit from an old generation once the group
 *   moved on (ILLEGAL_GENERATION / REBALANCE_IN_PROGRESS); we log and drop it — the
 *   next owner re-reads from the last committed offset. One window remains: a
 *   commit kafkajs retries after a connection error can land under a newer
 *   generation. It only ever commits records this member finished, so at worst
 *   the new owner's position moves back (duplicates), never forward past unread data.
 */
import type { Consumer as KafkaJSConsumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from '../../log.js';
import type { LagWatch } from '../lag.js';
import { PartitionWorker } from '../partition-worker.js';
import type { BatchRange, ConsumeOptions, Consumer } from '../types.js';
import { toConsumed } from './client.js';
import type { KafkaConsumerEvent, ResolvedKafkaOptions } from './options.js';
import { ConsumerSupervisor } from './supervisor.js';

interface Slot {
  readonly worker: PartitionWorker;
  readonly generation: number;
  revoked: boolean;
  /**
   * Offset after the last data record pushed, and where the fetched batch really ended (control/aborted records after
   * it).
   */
  tail: { afterData: number; next: number } | null;
}

let consumerSeq = 0;

export class KafkaGroupConsumer implements Consumer {
  readonly #o: ResolvedKafkaOptions;
  readonly #opts: ConsumeOptions;
  readonly #member: ConsumerSupervisor;
  readonly #log: Logger;
  readonly #name: string;
  readonly #slots = new Map<number, Slot>();
  /** Per partition: resolves when the last worker for it has finished (revoked or stopped). */
  readonly #predecessors = new Map<number, Promise<void>>();
  #generation = 0;
  /** The partitions of the current assignment (ConsumeOptions.onAssigned/onRevoked). */
  #assigned: readonly number[] = [];
  #memberId = '';
  #stopping: Promise<void> | null = null;

  readonly #lag: LagWatch;

  constructor(kafka: Kafka, o: ResolvedKafkaOptions, opts: ConsumeOptions, lag: LagWatch) {
    this.#lag = lag;
    this.#o = o;
    this.#opts = opts;
    this.#name = `${opts.group}#${++consumerSeq}`;
    this.#log = o.logger.child({ component: 'kafka-consumer', topic: opts.topic, group: opts.group });
    this.#member = new ConsumerSupervisor({
      kafka,
      o,
      group: opts.group,
      name: this.#name,
      wire: (c) => this.#wire(c),
      run: (c) => this.#run(c),
      log: this.#log,
    });
  }

  /** The kafkajs consumer now in the group: the supervisor replaces one that kafkajs gave up on. */
  get #consumer(): KafkaJSConsumer {
    return this.#member.current;
  }

  #wire(consumer: KafkaJSConsumer): void {
    const opts = this.#opts;
    const ev = consumer.events;
    consumer.on(ev.REBALANCING, () => this.#endGeneration('rebalancing'));
    consumer.on(ev.CRASH, (e) => {
      this.#log.warn({ err: e.payload.error, restart: e.payload.restart }, 'kafka consumer crashed');
      this.#endGeneration('crash');
    });
    consumer.on(ev.GROUP_JOIN, (e) => {
      this.#endGeneration('rejoined');
      this.#memberId = e.payload.memberId;
      const partitions = [...(e.payload.memberAssignment[opts.topic] ?? [])].sort((a, b) => a - b);
      this.#emit({ type: 'assigned', consumer: this.#name, memberId: this.#memberId, partitions });
      this.#assigned = partitions;
      this.#tell(opts.onAssigned, partitions);
      // Old workers may have paused partitions; new workers start empty and unpaused.
      if (partitions.length > 0) this.#kafka(() => consumer.resume([{ topic: opts.topic, partitions }]));
    });
  }

  /** Joins the group and starts fetching; resolves once the first assignment is in. */
  start(): Promise<void> {
    return this.#member.start();
  }

  async #run(consumer: KafkaJSConsumer): Promise<void> {
    await consumer.connect();
    await consumer.subscribe({ topic: this.#opts.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: (payload) => this.#onBatch(payload),
    });
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const slots = [...this.#slots.values()];
    // Hand buffered records to the handler once more and commit them while we are still a member.
    await Promise.all(slots.map((s) => s.worker.stop()));
    this.#slots.clear();
    await this.#member.stop().catch((err) => this.#log.warn({ err }, 'disconnecting the kafka consumer failed'));
    this.#revokeAssigned();
    await Promise.all(this.#predecessors.values());
    this.#lag.close();
  }

  async #onBatch({ batch, resolveOffset }: EachBatchPayload): Promise<void> {
    if (this.#stopping || batch.messages.length === 0) return;
    const partition = batch.partition;
    const slot = this.#slots.get(partition) ?? this.#startWorker(partition);
    if (slot.worker.buffered >= (this.#opts.maxBufferedRecords ?? 10_000)) {
      // Full: leave the batch unresolved, so kafkajs fetches it again once we resume.
      this.#pause(slot, partition);
      return;
    }
    const records = batch.messages.map((m) => toConsumed(batch.topic, partition, m));
    const last = records[records.length - 1]!;
    const batchEnd = Number(batch.lastOffset());
    slot.tail = { afterData: last.offset + 1, next: Math.max(batchEnd + 1, last.offset + 1) };
    slot.worker.push(records);
    resolveOffset(batch.lastOffset());
  }

  #startWorker(partition: number): Slot {
    const predecessor = this.#predecessors.get(partition) ?? Promise.resolve();
    const handler = this.#opts.handler;
    const plans = this.#opts.batchPlans;
    const slot: Slot = {
      generation: this.#generation,
      revoked: false,
      tail: null,
      worker: new PartitionWorker({
        topic: this.#opts.topic,
        partition,
        maxBatchRecords: this.#opts.maxBatchRecords ?? 1000,
        maxBatchWaitMs: this.#opts.maxBatchWaitMs ?? 1000,
        maxBufferedRecords: this.#opts.maxBufferedRecords ?? 10_000,
        handler: async (batch) => {
          await predecessor;
          await handler(batch);
        },
        commit: (next) => this.#commit(slot, partition, next),
        pause: () => this.#pause(slot, partition),
        resume: () => {
          if (!this.#current(slot)) return;
          this.#kafka(() => this.#consumer.resume([{ topic: this.#opts.topic, partitions: [partition] }]));
          this.#emit({ type: 'resumed', consumer: this.#name, partition });
        },
        ...(this.#opts.onHandlerError ? { onHandlerError: this.#opts.onHandlerError } : {}),
        ...(plans
          ? {
              // Read the recorded ranges only once the previous owner's last batch (and its record) is done.
              plans: {
                load: async (p: number, from: number) => {
                  await predecessor;
                  return plans.load(p, from);
                },
                record: (p: number, range: BatchRange) => plans.record(p, range),
              },
            }
          : {}),
      }),
    };
    this.#slots.set(partition, slot);
    this.#lag.setWorker(partition, slot.worker);
    return slot;
  }

  #current(slot: Slot): boolean {
    return !slot.revoked && slot.generation === this.#generation;
  }

  #pause(slot: Slot, partition: number): void {
    if (!this.#current(slot)) return;
    this.#kafka(() => this.#consumer.pause([{ topic: this.#opts.topic, partitions: [partition] }]));
    this.#emit({ type: 'paused', consumer: this.#name, partition });
  }

  async #commit(slot: Slot, partition: number, next: number): Promise<void> {
    if (!this.#current(slot)) return;
    // Past the last data record there may be only control markers / aborted records: commit past them too.
    const offset = slot.tail && next === slot.tail.afterData ? slot.tail.next : next;
    const ev = { consumer: this.#name, partition, offset };
    this.#emit({ type: 'commit-issued', ...ev });
    try {
      await this.#consumer.commitOffsets([{ topic: this.#opts.topic, partition, offset: String(offset) }]);
      this.#emit({ type: 'commit-succeeded', ...ev });
    } catch (err) {
      // Not fatal: the position stays where it was and whoever reads the partition next starts there.
      this.#emit({ type: 'commit-failed', ...ev });
      this.#log.warn(
        { partition, offset, err },
        'offset commit failed; records after the last commit will be read again',
      );
    }
  }

  /** The assignment this member held is over: revoke every worker; nothing is committed for them again. */
  #endGeneration(reason: string): void {
    this.#generation++;
    this.#revokeAssigned();
    if (this.#slots.size === 0) return;
    const partitions = [...this.#slots.keys()].sort((a, b) => a - b);
    for (const [partition, slot] of this.#slots) {
      slot.revoked = true;
      this.#lag.dropWorker(partition, slot.worker);
      const prev = this.#predecessors.get(partition) ?? Promise.resolve();
      const done = slot.worker.revoke().catch((err) => this.#log.error({ partition, err }, 'partition worker failed'));
      this.#predecessors.set(
        partition,
        Promise.all([prev, done]).then(() => undefined),
      );
    }
    this.#slots.clear();
    this.#emit({ type: 'revoked', consumer: this.#name, partitions, reason });
  }

  #revokeAssigned(): void {
    const was = this.#assigned;
    this.#assigned = [];
    if (was.length > 0) this.#tell(this.#opts.onRevoked, was);
  }

  #tell(fn: ((partitions: readonly number[]) => void) | undefined, partitions: readonly number[]): void {
    try {
      fn?.(partitions);
    } catch (err) {
      this.#log.error({ err }, 'a partition assignment callback threw');
    }
  }

  /** kafkajs throws from pause/resume/commit while it restarts a crashed consumer; the restart re-joins anyway. */
  #kafka(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#log.debug({ err }, 'kafka consumer not running');
    }
  }

  #emit(event: KafkaConsumerEvent): void {
    try {
      this.#o.observer?.(event);
    } catch (err) {
      this.#log.warn({ err }, 'kafka consumer observer threw');
    }
  }
}
