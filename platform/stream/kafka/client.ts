/**
 * kafkajs plumbing shared by the producer, consumer and reader sides: the client
 * (with kafkajs's logging routed into our pino logger) and the conversions
 * between our record shapes and kafkajs's.
 */
import {
  Kafka,
  logLevel,
  type IHeaders,
  type KafkaConfig,
  type KafkaMessage,
  type LogEntry,
  type Message,
  type SASLOptions,
} from 'kafkajs';
import { HooklogError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { MAX_RECORD_BYTES, recordBytes } from '../record-size.js';
import type { ConsumedRecord, StreamRecord, TopicWrite } from '../types.js';
import type { ResolvedKafkaOptions } from './options.js';
import type { TopicMessages } from './send-queue.js';

/**
 * One produce request's records, before compression, at most: below the broker's default message.max.bytes
 * (1 MiB, which bounds each partition's batch in a request), leaving room for batch overhead.
 */
export const MAX_REQUEST_BYTES = 768 * 1024;

/**
 * kafkajs logs through its own console logger by default. We take warn and
 * error only, into a child logger: kafkajs is chatty at info (every join, every
 * pause), and its errors during a broker restart are expected and retried, so
 * they are logged as warnings — our own code reports what actually failed.
 */
export function kafkaLogCreator(logger: Logger) {
  const log = logger.child({ component: 'kafkajs' });
  return () => (entry: LogEntry) => {
    const { message, timestamp: _t, logger: _l, ...extra } = entry.log as unknown as Record<string, unknown>;
    const fields = { namespace: entry.namespace, ...extra };
    if (entry.level === logLevel.ERROR || entry.level === logLevel.WARN) log.warn(fields, String(message));
    else log.debug(fields, String(message));
  };
}

export function createKafka(o: ResolvedKafkaOptions): Kafka {
  return new Kafka({
    clientId: o.clientId,
    brokers: o.brokers,
    ssl: o.ssl,
    ...(o.sasl ? { sasl: saslOptions(o.sasl) } : {}),
    connectionTimeout: 3_000,
    requestTimeout: 30_000,
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(o.logger),
  });
}

/** kafkajs types SASL options per mechanism; spelling each out keeps the type checker with us (no cast). */
function saslOptions(s: NonNullable<ResolvedKafkaOptions['sasl']>): SASLOptions {
  const { username, password } = s;
  switch (s.mechanism) {
    case 'plain':
      return { mechanism: 'plain', username, password };
    case 'scram-sha-256':
      return { mechanism: 'scram-sha-256', username, password };
    case 'scram-sha-512':
      return { mechanism: 'scram-sha-512', username, password };
  }
}

/**
 * A bare kafkajs client with its logging off, for tools that talk to a broker beside hooklog's own
 * stream (the test set-up's probe, admin clients of tests and benches, a raw topic reader). Everything
 * that builds a kafkajs client goes through this module.
 */
export function quietKafka(config: Pick<KafkaConfig, 'clientId' | 'brokers'> & Partial<KafkaConfig>): Kafka {
  return new Kafka({ logLevel: logLevel.NOTHING, ...config });
}

/**
 * Our record as a kafkajs message. Values and headers are sent as given; the key picks the partition. An empty
 * value goes as null: on a compacted topic that is a tombstone, so compaction drops the key (a risk state that
 * fell to none); a reader gets an empty value back either way (toConsumed).
 */
export function toMessage(r: StreamRecord): Message {
  return {
    key: r.key,
    value: r.value.length === 0 ? null : r.value,
    headers: { ...r.headers },
    ...(r.timestamp !== undefined ? { timestamp: String(r.timestamp) } : {}),
  };
}

function headerValue(v: IHeaders[string]): string | undefined {
  if (v === undefined) return undefined;
  // A header repeated on the wire arrives as an array; ours are never repeated, so the last one wins.
  const last = Array.isArray(v) ? v[v.length - 1] : v;
  return last === undefined ? undefined : Buffer.isBuffer(last) ? last.toString('utf8') : String(last);
}

/** A fetched kafkajs message as our record; kafkajs offsets and timestamps are decimal strings. */
export function toConsumed(topic: string, partition: number, m: KafkaMessage): ConsumedRecord {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    const s = headerValue(v);
    if (s !== undefined) headers[k] = s;
  }
  return {
    topic,
    partition,
    offset: Number(m.offset),
    key: m.key === null || m.key === undefined ? null : m.key.toString('utf8'),
    value: m.value ?? Buffer.alloc(0),
    headers,
    timestamp: Number(m.timestamp),
  };
}

/**
 * Splits records into runs of at most `maxBytes` (a record larger than that is a
 * run of its own), in order. The broker rejects a produce request above its
 * message.max.bytes (1 MiB by default), so large appends go out as several.
 */
export function chunkRecords<T extends StreamRecord>(records: readonly T[], maxBytes: number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const r of records) {
    const n = recordBytes(r);
    if (current.length > 0 && size + n > maxBytes) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(r);
    size += n;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * An atomic append as the produce requests that carry it, in order, each at most `maxBytes` before
 * compression (compression only shrinks what it can, and grows the rest by well under 0.1 %). Sent one
 * after another inside one transaction they are still all or nothing, and each partition's records keep
 * their order: the records are taken in the order written, a request holding a run of them. A record over
 * MAX_RECORD_BYTES can never be written (a record never spans batches): it is refused here, before the
 * transaction begins, with a non-retriable STREAM_APPEND_FAILED, rather than by the broker part-way through.
 */
export function transactionRequests(writes: readonly TopicWrite[], maxBytes: number): TopicMessages[][] {
  const requests: TopicMessages[][] = [];
  let request: TopicMessages[] = [];
  let size = 0;
  for (const { topic, records } of writes) {
    for (const r of records) {
      const n = recordBytes(r);
      if (n > MAX_RECORD_BYTES) {
        throw new HooklogError(
          'STREAM_APPEND_FAILED',
          `a record of ${n} bytes for ${topic} is over the largest a Kafka batch holds (${MAX_RECORD_BYTES} bytes)`,
          { retriable: false },
        );
      }
      if (request.length > 0 && size + n > maxBytes) {
        requests.push(request);
        request = [];
        size = 0;
      }
      let last = request[request.length - 1];
      if (last?.topic !== topic) request.push((last = { topic, messages: [] }));
      last.messages.push(toMessage(r));
      size += n;
    }
  }
  if (request.length > 0) requests.push(request);
  return requests;
}

/**
 * Awaits `op` for at most `ms`, then rejects with a retriable STREAM_UNAVAILABLE
 * naming `what`. The operation itself is not cancelled (kafkajs cannot cancel a send).
 */
export async function withDeadline<T>(op: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HooklogError('STREAM_UNAVAILABLE', `${what}: no answer from Kafka within ${Math.round(ms)} ms`, {
            retriable: true,
          }),
        ),
      Math.max(0, ms),
    );
  });
  try {
    return await Promise.race([op, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
