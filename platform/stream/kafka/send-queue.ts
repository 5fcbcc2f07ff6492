/**
 * Feeds the idempotent producer one request at a time, coalescing the appends
 * that queued up meanwhile into that one request (group commit).
 *
 * Why one at a time: kafkajs hands out a partition's sequence numbers when a
 * request is built and takes them back when the request fails, then retries —
 * without holding its per-broker lock between attempts. If another send slips
 * in between, it is given the same numbers. When the failed request had in fact
 * been written (the broker went away before answering), the broker takes the
 * newcomer for a retry of it, answers "done" and drops its records: an
 * acknowledged append lost. (platform/stream/kafka/broker-restart.test.ts
 * caught exactly that.) With a single send outstanding, only its own retries
 * reuse its numbers, which is what idempotence is built for.
 *
 * The queue is bounded in records; an append whose caller gave up (deadline)
 * and that has not been sent yet is dropped instead of being written later.
 */
import type { Message } from 'kafkajs';
import { HooklogError } from '../../errors.js';

export interface TopicMessages {
  topic: string;
  messages: Message[];
}

interface Item extends TopicMessages {
  bytes: number;
  abandoned: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface QueuedAppend {
  /** Settles once the broker acknowledged (or refused) the request carrying these records. */
  readonly done: Promise<void>;
  /** The caller no longer waits: if not sent yet, do not send. */
  abandon(): void;
}

export class SendQueue {
  readonly #send: (batch: TopicMessages[]) => Promise<void>;
  readonly #maxRequestBytes: number;
  readonly #maxQueuedRecords: number;
  #queue: Item[] = [];
  #queuedRecords = 0;
  #inFlight = false;
  #idle: Array<() => void> = [];

  constructor(
    send: (batch: TopicMessages[]) => Promise<void>,
    opts: { maxRequestBytes: number; maxQueuedRecords: number },
  ) {
    this.#send = send;
    this.#maxRequestBytes = opts.maxRequestBytes;
    this.#maxQueuedRecords = opts.maxQueuedRecords;
  }

  get queuedRecords(): number {
    return this.#queuedRecords;
  }

  enqueue(topic: string, messages: Message[], bytes: number): QueuedAppend {
    if (this.#queue.length > 0 && this.#queuedRecords + messages.length > this.#maxQueuedRecords) {
      const err = new HooklogError(
        'STREAM_UNAVAILABLE',
        `${this.#queuedRecords} records are already waiting for Kafka`,
        { retriable: true },
      );
      return { done: Promise.reject(err), abandon: () => undefined };
    }
    let resolve: () => void = () => undefined;
    let reject: (err: unknown) => void = () => undefined;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const item: Item = { topic, messages, bytes, abandoned: false, resolve, reject };
    this.#queue.push(item);
    this.#queuedRecords += messages.length;
    this.#kick();
    return { done, abandon: () => void (item.abandoned = true) };
  }

  /** Resolves once nothing is queued or in flight. */
  drained(): Promise<void> {
    if (!this.#inFlight && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #take(): Item[] {
    const taken: Item[] = [];
    let bytes = 0;
    while (this.#queue.length > 0) {
      const next = this.#queue[0]!;
      if (!next.abandoned && taken.length > 0 && bytes + next.bytes > this.#maxRequestBytes) break;
      this.#queue.shift();
      this.#queuedRecords -= next.messages.length;
      if (next.abandoned) {
        next.reject(new HooklogError('STREAM_UNAVAILABLE', 'append abandoned before it was sent', { retriable: true }));
        continue;
      }
      taken.push(next);
      bytes += next.bytes;
    }
    return taken;
  }

  #kick(): void {
    if (this.#inFlight) return;
    const items = this.#take();
    if (items.length === 0) {
      for (const wake of this.#idle.splice(0)) wake();
      return;
    }
    // One entry per topic, records in the order they were appended.
    const byTopic = new Map<string, Message[]>();
    for (const it of items) {
      const list = byTopic.get(it.topic) ?? [];
      list.push(...it.messages);
      byTopic.set(it.topic, list);
    }
    this.#inFlight = true;
    this.#send([...byTopic].map(([topic, messages]) => ({ topic, messages })))
      .then(
        () => items.forEach((it) => it.resolve()),
        (err: unknown) => items.forEach((it) => it.reject(err)),
      )
      .finally(() => {
        this.#inFlight = false;
        this.#kick();
      });
  }
}
