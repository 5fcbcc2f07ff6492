/**
 * Ownership of work as a consumer group's assignment of a topic's partitions
 * (Stream.assign): the group coordinator shares the partitions out among live
 * members, moves them when one joins, leaves or stops heartbeating, and we
 * never read the records (the member fetches only to keep its heartbeat going).
 *
 * kafkajs rebalances eagerly and announces the result in GROUP_JOIN. We keep
 * the partitions we are given again and hand only the difference to the
 * callbacks: a member that keeps a partition keeps its work running (its
 * Transactor was not fenced, so its in-memory state is still the truth). A
 * partition moved elsewhere is revoked when our own GROUP_JOIN arrives, at the
 * same moment the new owner learns of it; the new owner's claim fences us anyway.
 *
 * `current()` is a lease: true only while the coordinator answered a heartbeat
 * within the session time-out less two heartbeat intervals. A process that was
 * paused (SIGSTOP, a long GC, a cut network) wakes up with the lease expired
 * and starts no new work until the group has told it what it owns now.
 */
import type { Consumer as KafkaJSConsumer, Kafka } from 'kafkajs';
import type { Logger } from '../../log.js';
import { partitionFor } from '../embedded/partitioner.js';
import type { Assignment, AssignmentOptions } from '../types.js';
import type { ResolvedKafkaOptions } from './options.js';
import { ConsumerSupervisor } from './supervisor.js';

export class KafkaAssignment implements Assignment {
  readonly partitions: number;
  readonly #o: ResolvedKafkaOptions;
  readonly #opts: AssignmentOptions;
  readonly #member: ConsumerSupervisor;
  readonly #log: Logger;
  readonly #held = new Set<number>();
  /** Callbacks run one at a time, in the order the group's events came. */
  #chain: Promise<void> = Promise.resolve();
  #confirmedAt = 0;
  #memberId = '';
  #stopping: Promise<void> | null = null;

  constructor(kafka: Kafka, o: ResolvedKafkaOptions, opts: AssignmentOptions, partitions: number) {
    this.partitions = partitions;
    this.#o = o;
    this.#opts = opts;
    this.#log = o.logger.child({ component: 'kafka-assignment', topic: opts.topic, group: opts.group });
    // A replacement joins under a new member id: its GROUP_JOIN starts the work afresh (not `continuous`).
    this.#member = new ConsumerSupervisor({
      kafka,
      o,
      group: opts.group,
      name: opts.group,
      wire: (c) => this.#wire(c),
      run: (c) => this.#run(c),
      log: this.#log,
    });
  }

  #wire(consumer: KafkaJSConsumer): void {
    const opts = this.#opts;
    const ev = consumer.events;
    consumer.on(ev.HEARTBEAT, () => (this.#confirmedAt = Date.now()));
    consumer.on(ev.GROUP_JOIN, (e) => {
      // Kept partitions keep their work only if nobody else can have owned them since: same member
      // (not expelled and re-admitted under a new id) and no lapse of the lease in between.
      const continuous = e.payload.memberId === this.#memberId && this.#leaseHeld();
      this.#memberId = e.payload.memberId;
      this.#confirmedAt = Date.now();
      const now = new Set(e.payload.memberAssignment[opts.topic] ?? []);
      if (!continuous) this.#apply(new Set(), 'new membership');
      this.#apply(now, 'rejoined');
    });
    consumer.on(ev.CRASH, (e) => {
      this.#log.warn(
        { err: e.payload.error, restart: e.payload.restart },
        'assignment consumer crashed; giving up its partitions',
      );
      this.#confirmedAt = 0;
      this.#apply(new Set(), 'crash');
    });
  }

  async start(): Promise<void> {
    await this.#member.start();
    // kafkajs announced the first assignment (GROUP_JOIN) before run() resolved: let its work start.
    await this.#chain;
  }

  async #run(consumer: KafkaJSConsumer): Promise<void> {
    await consumer.connect();
    await consumer.subscribe({ topic: this.#opts.topic, fromBeginning: false });
    await consumer.run({ autoCommit: false, eachBatch: async () => undefined });
  }

  partitionOf(key: string): number {
    return partitionFor(key, this.partitions);
  }

  current(): boolean {
    return this.#stopping === null && this.#leaseHeld();
  }

  #leaseHeld(): boolean {
    const margin = 2 * this.#o.heartbeatIntervalMs;
    return Date.now() - this.#confirmedAt < Math.max(this.#o.sessionTimeoutMs - margin, this.#o.sessionTimeoutMs / 2);
  }

  /** Forgets partitions whose work was fenced: when the group assigns them to us again, onAssigned runs afresh. */
  release(partitions: readonly number[]): void {
    this.#chain = this.#chain.then(() => void partitions.forEach((p) => this.#held.delete(p)));
  }

  /** The callbacks see only what changed: revoked first (work stops), then assigned. */
  #apply(now: ReadonlySet<number>, reason: string): void {
    this.#chain = this.#chain.then(async () => {
      if (this.#stopping && now.size > 0) return;
      const revoked = [...this.#held].filter((p) => !now.has(p)).sort((a, b) => a - b);
      const assigned = [...now].filter((p) => !this.#held.has(p)).sort((a, b) => a - b);
      this.#log.info(
        { revoked, assigned, kept: [...this.#held].filter((p) => now.has(p)).length, reason },
        'ownership changed',
      );
      if (revoked.length > 0) {
        for (const p of revoked) this.#held.delete(p);
        await this.#opts.onRevoked(revoked).catch((err) => this.#opts.onError?.(err));
      }
      if (assigned.length > 0) {
        for (const p of assigned) this.#held.add(p);
        await this.#opts.onAssigned(assigned, this).catch((err) => this.#opts.onError?.(err));
      }
    });
  }

  /** Stops the work first (nothing owned is touched after this), then leaves the group at once. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#apply(new Set(), 'stopping');
      await this.#chain;
      await this.#member.stop().catch((err) => this.#log.warn({ err }, 'leaving the group failed'));
    })();
    return this.#stopping;
  }
}
