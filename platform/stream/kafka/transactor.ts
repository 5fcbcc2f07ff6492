/**
 * A Transactor over Kafka: one transactional producer per owned piece of work,
 * with the transactional id `<clientId>.<owner>` (owner names the work, for
 * example `hooklog.cursors.3`: "the pollers of cursors partition 3"). This is
 * Kafka Streams' exactly-once model (one producer per task): the id follows the
 * work, not the process, so
 *
 * - two processes from one config never share an id while they do different work;
 * - whoever takes the work over claims the same id, and the broker's
 *   InitProducerId bumps the epoch, aborts what the old holder left open, and
 *   refuses its later transactions (PRODUCER_FENCED / INVALID_PRODUCER_EPOCH);
 * - a restarted process that gets its work back fences its own zombie the same way.
 *
 * A fenced transactor stays fenced: it never re-initialises on its own (that
 * would fence the new owner in turn). A producer broken by something else (an
 * abort that failed) is re-initialised only while `stillOwner()` says the
 * holder still owns the work.
 */
import type { Producer, Transaction } from 'kafkajs';
import { HooklogError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { TopicWrite, Transactor } from '../types.js';
import { transactionRequests, withDeadline } from './client.js';
import { classifyKafkaError, isFencedError } from './errors.js';
import type { TopicMessages } from './send-queue.js';

export interface KafkaTransactorOptions {
  readonly owner: string;
  readonly transactionalId: string;
  readonly newProducer: (transactionalId: string) => Producer;
  /** Sends one produce request within the transaction `tx`. */
  readonly send: (tx: Transaction, topicMessages: TopicMessages[]) => Promise<void>;
  /** An atomic append goes out as produce requests of at most this many bytes (see transactionRequests). */
  readonly maxRequestBytes: number;
  readonly appendTimeoutMs: number;
  readonly logger: Logger;
  readonly stillOwner?: () => boolean;
}

export class KafkaTransactor implements Transactor {
  readonly owner: string;
  readonly #o: KafkaTransactorOptions;
  #producer: Producer | null = null;
  #chain: Promise<unknown> = Promise.resolve();
  #fenced: HooklogError | null = null;
  #closed = false;

  private constructor(o: KafkaTransactorOptions) {
    this.owner = o.owner;
    this.#o = o;
  }

  /** Connecting initialises the transactional id: from here on every earlier holder is fenced. */
  static async claim(o: KafkaTransactorOptions): Promise<KafkaTransactor> {
    const t = new KafkaTransactor(o);
    await withDeadline(t.#connect(), o.appendTimeoutMs, `claiming ${o.owner}`).catch(async (err) => {
      await t.close();
      throw classifyKafkaError(err, `claiming ${o.owner} (transactional id ${o.transactionalId})`);
    });
    return t;
  }

  /**
   * kafkajs initialises a transactional id (InitProducerId: the fencing) only when
   * the first transaction begins, not on connect: begin and abort an empty one
   * (no partitions, so no EndTxn is sent) to fence now, before the caller reads
   * what the previous holder left.
   */
  async #connect(): Promise<Producer> {
    const p = this.#o.newProducer(this.#o.transactionalId);
    this.#producer = p;
    await p.connect();
    const tx = await p.transaction();
    await tx.abort();
    return p;
  }

  /**
   * All of `writes` in one transaction, sent as several produce requests when they are large. A record
   * that no batch can hold is refused (STREAM_APPEND_FAILED, not retriable) before the transaction begins.
   */
  async appendAtomically(writes: readonly TopicWrite[]): Promise<void> {
    const action = `appending atomically as ${this.owner}`;
    let requests: TopicMessages[][];
    try {
      requests = transactionRequests(writes, this.#o.maxRequestBytes);
    } catch (err) {
      throw classifyKafkaError(err, action);
    }
    if (requests.length === 0) return;
    let abandoned = false;
    const run = this.#chain.then(() => (abandoned ? undefined : this.#transaction(requests)));
    this.#chain = run.catch(() => undefined);
    try {
      await withDeadline(run, this.#o.appendTimeoutMs, action);
    } catch (err) {
      abandoned = true;
      throw classifyKafkaError(err, action);
    }
  }

  async #transaction(requests: readonly TopicMessages[][]): Promise<void> {
    if (this.#fenced) throw this.#fenced;
    if (this.#closed) throw new HooklogError('STREAM_FENCED', `${this.owner}: the claim was given up`);
    let producer = this.#producer;
    if (!producer) {
      if (this.#o.stillOwner && !this.#o.stillOwner())
        throw this.#fence('ownership not confirmed; not re-initialising');
      producer = await this.#connect();
    }
    let tx;
    try {
      tx = await producer.transaction();
    } catch (err) {
      await this.#drop(producer);
      throw isFencedError(err) ? this.#fence('fenced by a newer holder', err) : err;
    }
    try {
      // In order, one at a time: a partition's records keep their order across requests.
      for (const topicMessages of requests) await this.#o.send(tx, topicMessages);
      await tx.commit();
    } catch (err) {
      if (isFencedError(err)) {
        await this.#drop(producer);
        throw this.#fence('fenced by a newer holder', err);
      }
      await tx.abort().catch(async (abortErr) => {
        this.#o.logger.warn(
          { err: abortErr, owner: this.owner },
          'aborting the Kafka transaction failed; re-initialising',
        );
        await this.#drop(producer);
      });
      throw err;
    }
  }

  #fence(why: string, cause?: unknown): HooklogError {
    this.#fenced ??= new HooklogError(
      'STREAM_FENCED',
      `${this.owner} (transactional id ${this.#o.transactionalId}): ${why}`,
      { retriable: false, cause },
    );
    this.#o.logger.warn({ owner: this.owner }, 'fenced: another process owns this work now');
    return this.#fenced;
  }

  async #drop(p: Producer): Promise<void> {
    if (this.#producer === p) this.#producer = null;
    await p.disconnect().catch(() => undefined);
  }

  /** Waits (bounded) for a transaction in flight, then disconnects. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await withDeadline(this.#chain, this.#o.appendTimeoutMs, 'closing').catch(() => undefined);
    const p = this.#producer;
    this.#producer = null;
    await p?.disconnect().catch(() => undefined);
  }
}
