/**
 * Keeps a group member alive across the crashes kafkajs does not recover from.
 *
 * kafkajs restarts a crashed consumer by itself only when the error is retriable (read in
 * node_modules/kafkajs/src/consumer/index.js, onCrash, for kafkajs 2.2.4). After any other error it
 * disconnects and stays down: the member leaves the group and nothing says so but one CRASH event
 * with `restart: false`. Such errors do happen to a healthy process: a protocol answer kafkajs
 * types as final (UNKNOWN_MEMBER_ID from a join, GROUP_MAX_SIZE_REACHED), or a TypeError inside
 * kafkajs when a broker restart empties its broker pool (kafkajs issue #1441). For the sink that
 * would be a process that answers /readyz and never inserts again; for the pollers' assignment, a
 * single instance that polls no org until it is restarted.
 *
 * So a member that must keep reading gets a new kafkajs consumer (a new object, as kafkajs's own
 * restart also builds a new consumer group) after a back-off that grows while replacements keep
 * failing and starts again from the first delay once one joins the group.
 */
import type { Kafka, Consumer as KafkaJSConsumer } from 'kafkajs';
import type { Logger } from '../../log.js';
import { RetryPolicies, backoffDelay } from '../../retry.js';
import type { ResolvedKafkaOptions } from './options.js';
import type { Holdings } from './sticky.js';
import { groupAssigners } from './sticky-assigner.js';

export interface SupervisorOptions {
  readonly kafka: Kafka;
  readonly o: ResolvedKafkaOptions;
  readonly group: string;
  /** The member's name in the observer's `replaced` events. */
  readonly name: string;
  /** Attaches the owner's listeners to each new kafkajs consumer. */
  readonly wire: (consumer: KafkaJSConsumer) => void;
  /** connect, subscribe and run. */
  readonly run: (consumer: KafkaJSConsumer) => Promise<void>;
  readonly log: Logger;
  /** The most one fetch brings per partition (compressed bytes); kafkajs's 1 MiB when unset. */
  readonly fetchMaxBytesPerPartition?: number;
}

export class ConsumerSupervisor {
  readonly #o: SupervisorOptions;
  #consumer: KafkaJSConsumer;
  /** Replacements since the last successful join; sets the back-off. */
  #failures = 0;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;
  /**
   * What the group last gave this member, sent with each join so the leader keeps it here (sticky-assigner.ts).
   * Kept across a replacement: the new consumer asks for its predecessor's partitions back.
   */
  #held: Holdings = new Map();

  constructor(o: SupervisorOptions) {
    this.#o = o;
    this.#consumer = this.#create();
  }

  /** The kafkajs consumer now in the group (pause, resume and commits go to it). */
  get current(): KafkaJSConsumer {
    return this.#consumer;
  }

  /** The first run; its failure is the caller's (start-up policy). Crashes after it are handled here. */
  start(): Promise<void> {
    return this.#o.run(this.#consumer);
  }

  /** No replacement after this; leaves the group with the consumer now current. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#consumer.disconnect();
  }

  #create(): KafkaJSConsumer {
    const { o, group } = this.#o;
    const consumer = this.#o.kafka.consumer({
      groupId: group,
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: o.heartbeatIntervalMs,
      maxWaitTimeInMs: o.fetchMaxWaitMs,
      ...(this.#o.fetchMaxBytesPerPartition
        ? {
            maxBytesPerPartition: this.#o.fetchMaxBytesPerPartition,
            // The whole response: kafkajs's 10 MiB, or room for a few partitions' worth.
            maxBytes: Math.max(10 * 1024 * 1024, 4 * this.#o.fetchMaxBytesPerPartition),
          }
        : {}),
      allowAutoTopicCreation: false,
      partitionAssigners: groupAssigners(() => this.#held, this.#o.log),
      // read_committed is kafkajs's default: records of aborted transactions are never delivered.
    });
    this.#o.wire(consumer);
    const ev = consumer.events;
    consumer.on(ev.GROUP_JOIN, (e) => {
      if (consumer !== this.#consumer) return;
      this.#failures = 0;
      this.#held = new Map(Object.entries(e.payload.memberAssignment));
    });
    consumer.on(ev.CRASH, (e) => {
      if (e.payload.restart || consumer !== this.#consumer) return;
      this.#replaceLater(e.payload.error);
    });
    return consumer;
  }

  #replaceLater(error: unknown): void {
    if (this.#stopped || this.#timer) return;
    const attempt = ++this.#failures;
    const delayMs = backoffDelay(RetryPolicies.rejoin, attempt);
    this.#o.log.error(
      { err: error, attempt, delayMs },
      'kafkajs gave up this consumer (an error it does not retry); a new one joins the group after the delay',
    );
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (this.#stopped) return;
      this.#announce(attempt, error);
      const old = this.#consumer;
      this.#consumer = this.#create();
      // kafkajs disconnected the old one before announcing the crash; this only releases what it still holds.
      void old.disconnect().catch(() => undefined);
      this.#o.run(this.#consumer).catch((err: unknown) => this.#replaceLater(err));
    }, delayMs);
  }

  #announce(attempt: number, error: unknown): void {
    try {
      this.#o.o.observer?.({ type: 'replaced', consumer: this.#o.name, attempt, error: String(error) });
    } catch (err) {
      this.#o.log.warn({ err }, 'kafka consumer observer threw');
    }
  }
}
