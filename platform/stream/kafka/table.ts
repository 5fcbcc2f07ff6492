/**
 * The latest record per key of one topic, kept current in this process by one
 * long-lived reader: how cursors (and alerting checkpoints) are restored when
 * work is handed over (Stream.readLatestByKey, Stream.follow). Kafka Streams
 * keeps its global stores the same way.
 *
 * Why not a reader per call: kafkajs has no group-less consumer, so each read
 * would join a fresh group, and a broker delays a new group's first join by
 * `group.initial.rebalance.delay.ms` (3 s by default). On the hand-over path
 * that delay alone broke "within 3 s of a SIGTERM". This reader joins its own
 * group (random name, one member, never commits) once, when the process starts
 * following the topic, and reads every partition from the beginning on.
 *
 * A read is final: the caller claims (fences) first, then the stream appends a
 * sync record to each partition read (`SYNC_KEY`, kafka-stream.ts) and
 * `readUntil` waits until the reader is past it. The reader is read_committed,
 * so it gets there only once every transaction that was open on the partition
 * when the sync record was written has ended: on a partition several owners
 * write to (alerting's checkpoints), another owner's transaction begun before
 * this owner's last commit holds the last stable offset back, and waiting for
 * that offset alone (as reads once did) returned the record before the last
 * one. Whatever the table holds up to the sync record is what any later
 * reader would see; it may also hold records appended after the call started
 * (they are committed too, and newer).
 * Progress comes from END_BATCH_PROCESS, not eachBatch: batches holding only
 * transaction markers or aborted records never reach eachBatch, and every
 * atomic append leaves such a marker at the tail.
 */
import { randomBytes } from 'node:crypto';
import type { Consumer as KafkaJSConsumer, Kafka } from 'kafkajs';
import { HooklogError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ConsumedRecord, RecordListener } from '../types.js';
import { toConsumed } from './client.js';
import { classifyKafkaError } from './errors.js';
import type { ResolvedKafkaOptions } from './options.js';
import { tableSize } from './telemetry.js';

/**
 * The key of the sync records a read appends (never a key of hooklog's own: it starts with a NUL). Their
 * value is null, so compaction removes them; every reader of hooklog's compacted topics skips them.
 */
export const SYNC_KEY = '\u0000hooklog-sync';

/** `value`'s bytes in a buffer of their own (never from the shared pool, so nothing else keeps it alive). */
function ownBytes(value: Buffer): Buffer {
  const own = Buffer.allocUnsafeSlow(value.length);
  value.copy(own);
  return own;
}

export class KeyedTable {
  readonly topic: string;
  readonly #consumer: KafkaJSConsumer;
  readonly #log: Logger;
  /** Per partition: the latest record of each key read so far. */
  readonly #latest = new Map<number, Map<string, ConsumedRecord>>();
  /** Per partition: the next offset the reader will look at. Only ever moves forward. */
  readonly #position = new Map<number, number>();
  /** The bytes of the values in #latest (size()). */
  #bytes = 0;
  readonly #waiters = new Set<() => void>();
  /** Stream.watch: told every record read, after the table took it. */
  readonly #listeners = new Set<RecordListener>();
  #broken: HooklogError | null = null;
  readonly #started: Promise<void>;
  /** Told when the reader stopped for good (a crash kafkajs does not restart), so the owner drops it. */
  readonly #onBroken: (t: KeyedTable) => void;

  constructor(kafka: Kafka, o: ResolvedKafkaOptions, topic: string, onBroken: (t: KeyedTable) => void) {
    this.topic = topic;
    this.#onBroken = onBroken;
    this.#log = o.logger.child({ component: 'kafka-table', topic });
    this.#consumer = kafka.consumer({
      groupId: `${o.topicPrefix}.latest-by-key.${randomBytes(6).toString('hex')}`,
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: o.heartbeatIntervalMs,
      maxWaitTimeInMs: 200,
      allowAutoTopicCreation: false,
    });
    const ev = this.#consumer.events;
    this.#consumer.on(ev.END_BATCH_PROCESS, (e) => {
      const { partition, lastOffset } = e.payload;
      const next = Number(lastOffset) + 1;
      if (next > (this.#position.get(partition) ?? 0)) this.#position.set(partition, next);
      for (const w of this.#waiters) w();
    });
    this.#consumer.on(ev.CRASH, (e) => {
      if (e.payload.restart) return;
      this.#break(classifyKafkaError(e.payload.error, `reading ${topic}`));
    });
    this.#started = this.#start();
    this.#started.catch((err: unknown) => this.#break(classifyKafkaError(err, `reading ${topic}`)));
  }

  async #start(): Promise<void> {
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topic: this.topic, fromBeginning: true });
    // No commits, so every (re)join reads each partition from its beginning again: a record below the position
    // already read is told to watchers again but leaves the table as it is, and an older one never replaces a newer
    // one.
    await this.#consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        let table = this.#latest.get(batch.partition);
        if (!table) this.#latest.set(batch.partition, (table = new Map()));
        const read: ConsumedRecord[] = [];
        const seen = this.#position.get(batch.partition) ?? 0;
        for (const m of batch.messages) {
          const fetched = toConsumed(this.topic, batch.partition, m);
          if (fetched.key === null || fetched.key === SYNC_KEY) continue;
          // Read before (a rejoin reads from the beginning again): the table already holds it or something newer.
          const had = table.get(fetched.key);
          const kept = fetched.offset >= seen && !(had && had.offset > fetched.offset);
          if (!kept && this.#listeners.size === 0) continue;
          // kafkajs hands each value as a slice of the whole fetch response (up to a MiB per partition while
          // catching up). A record kept here (or by a watcher) for the life of the process kept that response
          // alive with it: one per key, each from a different response, so the memory grew with how far back in
          // the topic's history each key's latest record sat, not with the keys. Records handed on own a copy.
          const r: ConsumedRecord = { ...fetched, value: ownBytes(fetched.value) };
          read.push(r);
          if (!kept) continue;
          this.#bytes -= had?.value.length ?? 0;
          // A tombstone (empty value: toMessage) removes the key, or the table would keep every key the topic ever
          // had (a risk state per user that expired): readers get no record for it, as after compaction.
          if (r.value.length === 0) table.delete(r.key!);
          else {
            table.set(r.key!, r);
            this.#bytes += r.value.length;
          }
        }
        tableSize(this.topic, this.size());
        if (read.length > 0) for (const l of this.#listeners) this.#tell(l, read);
      },
    });
  }

  /**
   * Hands `listener` the latest record per key read so far, then every record read after (Stream.watch). Both in
   * one turn of the event loop, so no batch falls between them. Returns the function that stops it.
   */
  watch(listener: RecordListener): () => void {
    const now: ConsumedRecord[] = [];
    for (const table of this.#latest.values()) for (const r of table.values()) now.push(r);
    if (now.length > 0) this.#tell(listener, now);
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** The listeners to move to a new reader when this one broke. */
  listeners(): RecordListener[] {
    return [...this.#listeners];
  }

  #tell(listener: RecordListener, records: readonly ConsumedRecord[]): void {
    try {
      listener(records);
    } catch (err) {
      this.#log.error({ err }, 'a watcher of the topic threw; it keeps getting records');
    }
  }

  /** What the table keeps: its keys and the bytes of their values (each value owns exactly its bytes). */
  size(): { keys: number; bytes: number } {
    let keys = 0;
    for (const table of this.#latest.values()) keys += table.size;
    return { keys, bytes: this.#bytes };
  }

  /** Resolves once the reader has joined its group and started reading. */
  started(): Promise<void> {
    return this.#started;
  }

  /**
   * The latest record per key of `partitions` (all when not given), once the reader is past `ends`
   * (partition → offset): the offsets just after the sync records the caller appended.
   */
  async readUntil(
    ends: ReadonlyMap<number, number>,
    partitions?: readonly number[],
    timeoutMs = 30_000,
  ): Promise<Map<string, ConsumedRecord>> {
    if (ends.size > 0) await this.#until(ends, timeoutMs);
    const out = new Map<string, ConsumedRecord>();
    for (const [p, table] of this.#latest) {
      if (partitions && !partitions.includes(p)) continue;
      for (const [k, r] of table) out.set(k, r);
    }
    return out;
  }

  #until(ends: ReadonlyMap<number, number>, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const check = () => {
        if (this.#broken) return done(this.#broken);
        if ([...ends].every(([p, end]) => (this.#position.get(p) ?? 0) >= end)) done();
      };
      const timer = setTimeout(
        () =>
          done(
            new HooklogError(
              'STREAM_UNAVAILABLE',
              `reading ${this.topic} to its end took longer than ${timeoutMs} ms`,
              {
                retriable: true,
              },
            ),
          ),
        timeoutMs,
      );
      const done = (err?: Error) => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        if (err) reject(err);
        else resolve();
      };
      this.#waiters.add(check);
      check();
    });
  }

  #break(err: HooklogError, stopping = false): void {
    if (this.#broken) return;
    this.#broken = err;
    if (!stopping) this.#log.warn({ err }, 'the latest-by-key reader stopped; the next read starts a new one');
    for (const w of this.#waiters) w();
    this.#onBroken(this);
  }

  async stop(): Promise<void> {
    this.#break(new HooklogError('STREAM_CLOSED', `the reader of ${this.topic} is stopped`), true);
    await this.#consumer.disconnect().catch((err) => this.#log.warn({ err }, 'disconnecting the reader failed'));
  }
}
