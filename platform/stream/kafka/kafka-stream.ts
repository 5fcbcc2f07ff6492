/**
 * The Stream seam over Apache Kafka (kafkajs).
 *
 * Producing: a small pool of idempotent producers (acks=all, option
 * `producers`) for `append`, each fed one request at a time by its own SendQueue
 * that coalesces concurrent appends (see send-queue.ts for why a kafkajs
 * producer must never have two sends outstanding). An append goes whole to the
 * producer its first record's key hashes to: its records keep exactly their
 * order (consumers such as alerting track event time per partition, across
 * keys), appends of one key (a hook delivery is one org) stay in order even
 * when several are in flight, and appends for different orgs overlap instead of
 * waiting for each other's acknowledgements. Concurrent appends that mix keys
 * may interleave with each other, as they could on any broker. A separate
 * transactional producer serves `appendAtomically`; a large atomic append (a
 * 1,000-event page is several MiB) goes out as several produce requests of at
 * most MAX_REQUEST_BYTES inside its one transaction (client.ts,
 * transactionRequests), so no request meets the broker's 1 MiB limit however
 * well or badly the records compress. Idempotence lets kafkajs retry
 * a send whose acknowledgement was lost without writing the records twice.
 * kafkajs retries an idempotent send without limit, and a send must never be
 * given up half-way (a later send could reuse its sequence numbers and be taken
 * for a duplicate). So the caller's wait is bounded (appendTimeoutMs →
 * retriable STREAM_UNAVAILABLE, nothing acknowledged) while a send already on
 * the wire goes on; appends not yet sent are dropped when their caller gives up.
 * maxInFlightRequests is 1, not Java's 5: kafkajs implemented idempotence after
 * KIP-98's original rule of one in-flight request (kafkajs issue #200), takes a
 * per-broker lock around each produce request, and its sequence bookkeeping is
 * only safe with one request outstanding.
 */
import { CompressionTypes, Partitioners, type Admin, type Kafka, type Producer, type Transaction } from 'kafkajs';
import { HooklogError, errorMessage, isRetriable } from '../../errors.js';
import { RetryPolicies, retry } from '../../retry.js';
import type { Logger } from '../../log.js';
import type {
  Assignment,
  AssignmentOptions,
  Transactor,
  ConsumeOptions,
  ConsumedRecord,
  Consumer,
  RecordListener,
  Stream,
  StreamRecord,
  TopicSpec,
  TopicWrite,
} from '../types.js';
import {
  MAX_REQUEST_BYTES,
  chunkRecords,
  createKafka,
  toMessage,
  transactionRequests,
  withDeadline,
} from './client.js';
import { recordBytes } from '../record-size.js';
import { watchLag } from '../lag.js';
import { KafkaGroupConsumer } from './consumer.js';
import { classifyKafkaError, topicOffsets } from './errors.js';
import { resolveKafkaOptions, type KafkaStreamOptions, type ResolvedKafkaOptions } from './options.js';
import { KeyedTable, SYNC_KEY } from './table.js';
import { KafkaAssignment } from './assignment.js';
import { KafkaTransactor } from './transactor.js';
import { SendQueue, type TopicMessages } from './send-queue.js';
import { produceRequestSent } from './telemetry.js';

/** Answers a topic being created by another instance gives for a moment (see ensureTopics). */
const TOPIC_RACE =
  /UNKNOWN_TOPIC_OR_PARTITION|TOPIC_ALREADY_EXISTS|LEADER_NOT_AVAILABLE|does not host this topic-partition|already exists/i;

/**
 * A topic race, not a real refusal: kafkajs reports createTopics failures as one aggregate error, which is
 * a race only when every topic in it failed for a race reason (a bad replication factor is not retried).
 */
function isTopicRace(err: unknown): boolean {
  const inner = (err as { errors?: unknown }).errors;
  if (Array.isArray(inner) && inner.length > 0) {
    return inner.every((e) => TOPIC_RACE.test(`${(e as { type?: string }).type ?? ''} ${errorMessage(e)}`));
  }
  return TOPIC_RACE.test(errorMessage(err));
}

/** The broker waits this long for the in-sync replicas' acknowledgements (acks=all). */
const ACK_TIMEOUT_MS = 30_000;
/**
 * segment.ms of the compacted topics hooklog creates. Kafka compacts only closed segments, and by default a segment
 * closes after 7 days (or 1 GiB): until then a compacted topic keeps every record ever written, and its long-lived
 * readers (table.ts) read all of it at every start and every rejoin (a broker restart). alerting-state takes the
 * whole engine state per batch (up to 125 KB a record, about 60 MB in 4.5 minutes of a probe at 4x the soak's hook
 * rate), so what a process read, and the memory it took doing so, grew with the run's history (issue 38). Closing a
 * segment every 10 minutes lets the cleaner keep a compacted topic near its live keys plus the last minutes' writes.
 */
export const COMPACTED_SEGMENT_MS = 600_000;
const PING_TIMEOUT_MS = 3_000;

export class KafkaStream implements Stream {
  readonly kind = 'kafka' as const;
  readonly #o: ResolvedKafkaOptions;
  readonly #log: Logger;
  readonly #kafka: Kafka;
  readonly #admin: Admin;
  /** `append`'s idempotent producers, and the send queue of each (same index). */
  readonly #producers: Producer[];
  readonly #sends: SendQueue[];
  /** Appends whose first record has no key go to producers in turn. */
  #nextUnkeyed = 0;
  #txProducer: Producer | null = null;
  /** appendAtomically calls run one after another: one open transaction per transactional id. */
  #txChain: Promise<unknown> = Promise.resolve();
  #closed = false;
  readonly #consumers = new Set<KafkaGroupConsumer>();
  readonly #assignments = new Set<KafkaAssignment>();
  /** One long-lived latest-by-key reader per followed topic (table.ts). */
  readonly #tables = new Map<string, KeyedTable>();
  /** Stream.watch listeners → how to attach each to a new reader of its topic. */
  readonly #watchers = new Map<RecordListener, (t: KeyedTable) => void>();

  private constructor(o: ResolvedKafkaOptions) {
    this.#o = o;
    this.#log = o.logger.child({ component: 'kafka-stream' });
    this.#kafka = createKafka(o);
    this.#admin = this.#kafka.admin();
    this.#producers = Array.from({ length: o.producers }, () => this.#newProducer());
    this.#sends = this.#producers.map(
      (producer) =>
        new SendQueue(
          async (topicMessages) => {
            let records = 0;
            for (const t of topicMessages) records += t.messages.length;
            produceRequestSent(records);
            await producer.sendBatch({
              topicMessages,
              acks: -1,
              timeout: ACK_TIMEOUT_MS,
              compression: this.#compression,
            });
          },
          { maxRequestBytes: MAX_REQUEST_BYTES, maxQueuedRecords: o.maxQueuedRecords },
        ),
    );
  }

  /** Connects the admin client and the idempotent producer; fails with STREAM_UNAVAILABLE when no broker answers. */
  static async open(options: KafkaStreamOptions): Promise<KafkaStream> {
    const stream = new KafkaStream(resolveKafkaOptions(options));
    try {
      await stream.#admin.connect();
      await Promise.all(stream.#producers.map((p) => p.connect()));
    } catch (err) {
      await stream.close();
      throw classifyKafkaError(err, `connecting to Kafka at ${options.brokers.join(',')}`);
    }
    return stream;
  }

  #newProducer(transactionalId?: string): Producer {
    return this.#kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      // Java-compatible murmur2: same key, same partition as Java clients
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: Number.MAX_SAFE_INTEGER, maxRetryTime: 5_000 },
      ...(transactionalId ? { transactionalId, transactionTimeout: 60_000 } : {}),
    });
  }

  get #compression(): CompressionTypes {
    return this.#o.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
  }

  #checkOpen(): void {
    if (this.#closed) throw new HooklogError('STREAM_CLOSED', 'the Kafka stream is closed');
  }

  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    this.#checkOpen();
    const what = `creating topics ${specs.map((s) => s.name).join(', ')}`;
    // Instances of a fleet start together and create the same topics: the losers of that race see
    // "already exists", then for a moment "unknown topic" while the winner's topic reaches every
    // broker. Those answers mean "not ready yet", so they are retried (start-up policy: about 45 s).
    await retry(() => this.#ensureTopicsOnce(specs), {
      policy: RetryPolicies.startup,
      retriable: isTopicRace,
    }).catch((err: unknown) => {
      throw classifyKafkaError(err, what);
    });
  }

  async #ensureTopicsOnce(specs: readonly TopicSpec[]): Promise<void> {
    const existing = new Set(await this.#admin.listTopics());
    const missing = specs.filter((s) => !existing.has(s.name));
    if (missing.length > 0) {
      await this.#admin.createTopics({
        waitForLeaders: true,
        timeout: 30_000,
        topics: missing.map((s) => ({
          topic: s.name,
          numPartitions: s.partitions,
          replicationFactor: this.#o.replicationFactor,
          configEntries: [
            ...(s.compacted
              ? [
                  { name: 'cleanup.policy', value: 'compact' },
                  { name: 'segment.ms', value: String(COMPACTED_SEGMENT_MS) },
                ]
              : []),
            ...(this.#o.minInsyncReplicas > 1
              ? [{ name: 'min.insync.replicas', value: String(this.#o.minInsyncReplicas) }]
              : []),
          ],
        })),
      });
      // createTopics answers "already exists" (false) when another instance won the race: fine.
    }
    // Created here or by another instance a moment ago: usable only once every partition has a leader.
    const { topics } = await this.#admin.fetchTopicMetadata({ topics: specs.map((s) => s.name) });
    const leaderless = topics.filter((t) => t.partitions.some((p) => p.leader < 0)).map((t) => t.name);
    if (leaderless.length > 0) throw new Error(`LEADER_NOT_AVAILABLE: no leader yet for ${leaderless.join(', ')}`);
  }

  /**
   * Resolves once the broker acknowledged every record (acks=all). Rejects with a
   * retriable STREAM_UNAVAILABLE when that took longer than appendTimeoutMs.
   * Records not sent by then never will be; records already on the wire may
   * still be written (once), so callers must not acknowledge them — a retry by
   * the sender is absorbed downstream by uuid.
   */
  async append(topic: string, records: readonly StreamRecord[]): Promise<void> {
    this.#checkOpen();
    if (records.length === 0) return;
    const action = `appending ${records.length} records to ${topic}`;
    const waiting = this.#queuedRecords();
    if (waiting > 0 && waiting + records.length > this.#o.maxQueuedRecords) {
      throw new HooklogError('STREAM_UNAVAILABLE', `${waiting} records are already waiting for Kafka`, {
        retriable: true,
      });
    }
    const send = this.#queueFor(records[0]!.key);
    const queued = chunkRecords(records, MAX_REQUEST_BYTES).map((chunk) =>
      send.enqueue(
        topic,
        chunk.map(toMessage),
        chunk.reduce((n, r) => n + recordBytes(r), 0),
      ),
    );
    try {
      await withDeadline(Promise.all(queued.map((q) => q.done)), this.#o.appendTimeoutMs, action);
    } catch (err) {
      for (const q of queued) q.abandon();
      throw classifyKafkaError(err, action);
    }
  }

  #queuedRecords(): number {
    let n = 0;
    for (const q of this.#sends) n += q.queuedRecords;
    return n;
  }

  /** The send queue an append goes to, by its first record's key (see the note at the top). */
  #queueFor(key: string | null): SendQueue {
    const n = this.#sends.length;
    return this.#sends[n === 1 ? 0 : key === null ? this.#nextUnkeyed++ % n : keySlot(key, n)]!;
  }

  /**
   * One Kafka transaction holding every write: all become visible to
   * read_committed consumers together, or none does. On failure the transaction
   * is aborted and the producer dropped; the next call starts a new one with the
   * same transactional id, which also fences anything the old one left open.
   * A record over MAX_RECORD_BYTES is refused (not retriable) before anything is sent.
   */
  async appendAtomically(writes: readonly TopicWrite[]): Promise<void> {
    this.#checkOpen();
    const topics = writes.filter((w) => w.records.length > 0).map((w) => w.topic);
    const action = `appending atomically to ${topics.join(', ')}`;
    let requests: TopicMessages[][];
    try {
      requests = transactionRequests(writes, MAX_REQUEST_BYTES);
    } catch (err) {
      throw classifyKafkaError(err, action);
    }
    if (requests.length === 0) return;
    let abandoned = false;
    const run = this.#txChain.then(() => (abandoned ? undefined : this.#transaction(requests)));
    this.#txChain = run.catch(() => undefined);
    try {
      await withDeadline(run, this.#o.appendTimeoutMs, action);
    } catch (err) {
      abandoned = true; // if it has not started yet, it never will
      throw classifyKafkaError(err, action);
    }
  }

  async #transaction(requests: readonly TopicMessages[][]): Promise<void> {
    if (!this.#txProducer) {
      const p = this.#newProducer(this.#o.transactionalId);
      await p.connect();
      this.#txProducer = p;
    }
    const producer = this.#txProducer;
    const tx = await producer.transaction().catch(async (err) => {
      await this.#dropTxProducer(producer);
      throw err;
    });
    try {
      for (const topicMessages of requests) await this.#sendInTransaction(tx, topicMessages);
      await tx.commit();
    } catch (err) {
      await tx
        .abort()
        .catch((abortErr) =>
          this.#log.warn({ err: abortErr }, 'aborting the Kafka transaction failed; the next one fences it'),
        );
      await this.#dropTxProducer(producer);
      throw classifyKafkaError(err, 'Kafka transaction');
    }
  }

  /** One produce request of a transaction; the next is sent only once the broker acknowledged this one. */
  async #sendInTransaction(tx: Transaction, topicMessages: TopicMessages[]): Promise<void> {
    await tx.sendBatch({ topicMessages, acks: -1, timeout: ACK_TIMEOUT_MS, compression: this.#compression });
  }

  async #dropTxProducer(p: Producer): Promise<void> {
    if (this.#txProducer === p) this.#txProducer = null;
    await p.disconnect().catch(() => undefined);
  }

  /**
   * See transactor.ts: the transactional id `<clientId>.<owner>` follows the work, and claiming it fences the
   * previous holder.
   */
  async claim(owner: string, stillOwner?: () => boolean): Promise<Transactor> {
    this.#checkOpen();
    return KafkaTransactor.claim({
      owner,
      transactionalId: `${this.#o.clientId}.${owner}`,
      newProducer: (id) => this.#newProducer(id),
      send: (tx, topicMessages) => this.#sendInTransaction(tx, topicMessages),
      maxRequestBytes: MAX_REQUEST_BYTES,
      appendTimeoutMs: this.#o.appendTimeoutMs,
      logger: this.#log,
      ...(stillOwner ? { stillOwner } : {}),
    });
  }

  async assign(opts: AssignmentOptions): Promise<Assignment> {
    this.#checkOpen();
    let partitions: number;
    try {
      const meta = await this.#admin.fetchTopicMetadata({ topics: [opts.topic] });
      partitions = meta.topics[0]?.partitions.length ?? 0;
    } catch (err) {
      throw classifyKafkaError(err, `reading the partitions of ${opts.topic}`);
    }
    if (partitions === 0)
      throw new HooklogError('STREAM_UNAVAILABLE', `topic ${opts.topic} has no partitions`, { retriable: true });
    const assignment = new KafkaAssignment(this.#kafka, this.#o, opts, partitions);
    try {
      await assignment.start();
    } catch (err) {
      await assignment.stop().catch(() => undefined);
      throw classifyKafkaError(err, `joining group ${opts.group} on ${opts.topic}`);
    }
    this.#assignments.add(assignment);
    return {
      partitions,
      partitionOf: (key) => assignment.partitionOf(key),
      current: () => assignment.current(),
      release: (ps) => assignment.release(ps),
      stop: async () => {
        this.#assignments.delete(assignment);
        await assignment.stop();
      },
    };
  }

  async consume(opts: ConsumeOptions): Promise<Consumer> {
    this.#checkOpen();
    const consumer = new KafkaGroupConsumer(this.#kafka, this.#o, opts, watchLag(this, opts.topic, opts.group));
    try {
      await consumer.start();
    } catch (err) {
      await consumer.stop().catch(() => undefined);
      throw classifyKafkaError(err, `joining group ${opts.group} on ${opts.topic}`);
    }
    this.#consumers.add(consumer);
    return {
      stop: async () => {
        this.#consumers.delete(consumer);
        await consumer.stop();
      },
    };
  }

  async latestOffsets(topic: string): Promise<Map<number, number>> {
    this.#checkOpen();
    try {
      const offsets = await this.#admin.fetchTopicOffsets(topic);
      return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
    } catch (err) {
      throw classifyKafkaError(err, `reading end offsets of ${topic}`);
    }
  }

  async committedOffsets(topic: string, group: string): Promise<Map<number, number>> {
    this.#checkOpen();
    // kafkajs's admin does not retry OffsetFetch when the group's coordinator moves or is still loading
    // (NOT_COORDINATOR right after a broker starts, or a group's first use): a moment later it answers.
    return retry(
      async () => {
        try {
          const [entry] = await this.#admin.fetchOffsets({ groupId: group, topics: [topic] });
          const out = new Map<number, number>();
          // -1 means "nothing committed" for that partition.
          for (const p of entry?.partitions ?? []) if (Number(p.offset) >= 0) out.set(p.partition, Number(p.offset));
          return out;
        } catch (err) {
          throw classifyKafkaError(err, `reading committed offsets of ${group} on ${topic}`);
        }
      },
      { policy: RetryPolicies.request, retriable: isRetriable },
    );
  }

  /**
   * Through the topic's long-lived reader (table.ts): started by `follow`, or by the first read of a topic
   * that has records, so only that first read waits for a group to form.
   */
  async readLatestByKey(topic: string, partitions?: readonly number[]): Promise<Map<string, ConsumedRecord>> {
    this.#checkOpen();
    const ends = await this.#sync(topic, partitions);
    let table = this.#tables.get(topic);
    if (!table) {
      // No reader yet: start one (a group join) only when something besides sync records may be there.
      const offsets = await topicOffsets(this.#admin, topic);
      const onlySync = offsets.every((p) => !ends.has(p.partition) || Number(p.low) >= ends.get(p.partition)! - 1);
      if (onlySync) return new Map();
      table = this.#table(topic);
    }
    return table.readUntil(ends, partitions);
  }

  /**
   * Appends a sync record (`SYNC_KEY`, null value) to each of `partitions` (all when not given), outside any
   * transaction, and returns each partition's offset just after it: a read_committed reader is past it only
   * once every transaction open on the partition before it has ended (table.ts).
   */
  async #sync(topic: string, partitions?: readonly number[]): Promise<Map<number, number>> {
    const parts = partitions ?? (await topicOffsets(this.#admin, topic)).map((p) => p.partition);
    if (parts.length === 0) return new Map();
    try {
      const sent = await this.#producers[0]!.send({
        topic,
        acks: -1,
        messages: parts.map((partition) => ({ key: SYNC_KEY, value: null, partition })),
      });
      return new Map(sent.map((m) => [m.partition, Number(m.baseOffset ?? m.offset) + 1]));
    } catch (err) {
      throw classifyKafkaError(err, `appending sync records to ${topic}`);
    }
  }

  async follow(topic: string): Promise<void> {
    this.#checkOpen();
    await this.#table(topic).started();
  }

  /**
   * Through the topic's long-lived reader. A reader that breaks for good (a crash kafkajs does not restart) hands
   * its watchers to a new one after a second, which reads the topic from the beginning again for them.
   */
  async watch(topic: string, listener: RecordListener): Promise<() => void> {
    this.#checkOpen();
    let table = this.#table(topic);
    await table.started();
    table = this.#table(topic);
    let stop = table.watch(listener);
    let stopped = false;
    this.#watchers.set(listener, (t) => {
      if (!stopped) stop = t.watch(listener);
    });
    await table.readUntil(await this.#sync(topic));
    return () => {
      stopped = true;
      this.#watchers.delete(listener);
      stop();
    };
  }

  #table(topic: string): KeyedTable {
    let t = this.#tables.get(topic);
    if (!t) {
      t = new KeyedTable(this.#kafka, this.#o, topic, (broken) => {
        if (this.#tables.get(topic) !== broken) return;
        this.#tables.delete(topic);
        const moved = broken.listeners();
        if (moved.length === 0) return;
        setTimeout(() => {
          if (this.#closed) return;
          const next = this.#table(topic);
          for (const l of moved) this.#watchers.get(l)?.(next);
        }, 1000).unref();
      });
      this.#tables.set(topic, t);
    }
    return t;
  }

  async ping(): Promise<void> {
    this.#checkOpen();
    try {
      const cluster = await withDeadline(this.#admin.describeCluster(), PING_TIMEOUT_MS, 'pinging Kafka');
      if (cluster.brokers.length === 0)
        throw new HooklogError('STREAM_UNAVAILABLE', 'Kafka reports no brokers', { retriable: true });
    } catch (err) {
      throw classifyKafkaError(err, 'pinging Kafka');
    }
  }

  /** Stops this stream's consumers, waits (bounded) for sends in flight, then disconnects. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#assignments, ...this.#consumers, ...this.#tables.values()].map((c) => c.stop()));
    this.#consumers.clear();
    this.#assignments.clear();
    this.#tables.clear();
    const pending = Promise.all([...this.#sends.map((q) => q.drained()), this.#txChain]);
    await withDeadline(pending, this.#o.appendTimeoutMs, 'closing').catch(() =>
      this.#log.warn({ queued: this.#queuedRecords() }, 'closing with Kafka sends still unacknowledged'),
    );
    const tx = this.#txProducer;
    this.#txProducer = null;
    await Promise.all(
      [tx?.disconnect(), ...this.#producers.map((p) => p.disconnect()), this.#admin.disconnect()].map((p) =>
        Promise.resolve(p).catch((err) => this.#log.warn({ err }, 'disconnecting from Kafka failed')),
      ),
    );
  }
}

/** The producer slot of a key: FNV-1a over its UTF-16 units, so the same key always takes the same producer. */
function keySlot(key: string, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % n;
}
