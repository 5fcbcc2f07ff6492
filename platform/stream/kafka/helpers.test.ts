/** Pure parts of the Kafka stream: error classification, option checks, record conversion. No broker needed. */
import {
  KafkaJSAggregateError,
  KafkaJSConnectionError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSSASLAuthenticationError,
} from 'kafkajs';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { silentLogger } from '../../log.js';
import { chunkRecords, toConsumed, toMessage, transactionRequests } from './client.js';
import { Header } from '../headers.js';
import { MAX_RECORD_BYTES, TRUNCATED_LETTER_BYTES, recordBytes, storableLetter } from '../record-size.js';
import { classifyKafkaError } from './errors.js';
import { resolveKafkaOptions } from './options.js';

/** kafkajs's type declarations lag its constructors; build its errors the way its own code does. */
type Ctor = new (...args: unknown[]) => Error;
const make = (C: unknown, ...args: unknown[]) => new (C as Ctor)(...args);
const protocol = (type: string, retriable: boolean) =>
  new KafkaJSProtocolError({ type, retriable, message: `broker says ${type}`, code: 0 } as never);

describe('classifyKafkaError', () => {
  it('treats lost connections and exhausted retries as a retriable outage', () => {
    const conn = classifyKafkaError(
      new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9092'),
      'appending',
    );
    expect([conn.code, conn.retriable]).toEqual(['STREAM_UNAVAILABLE', true]);
    const exhausted = make(KafkaJSNumberOfRetriesExceeded, new KafkaJSConnectionError('closed'), {
      retryCount: 5,
      retryTime: 3000,
    });
    const e = classifyKafkaError(exhausted, 'appending');
    expect([e.code, e.retriable]).toEqual(['STREAM_UNAVAILABLE', true]);
    expect(e.message).toMatch(/^appending: /);
    expect(e.cause).toBe(exhausted);
  });

  it('rejects records the broker refused, without retry, even when wrapped', () => {
    const tooLarge = protocol('MESSAGE_TOO_LARGE', false);
    const wrapped = make(KafkaJSNonRetriableError, tooLarge, { cause: tooLarge });
    for (const err of [tooLarge, wrapped, new KafkaJSAggregateError('some topics failed', [tooLarge])]) {
      const e = classifyKafkaError(err, 'appending');
      expect([e.code, e.retriable]).toEqual(['STREAM_APPEND_FAILED', false]);
    }
  });

  it('does not retry what only configuration can fix', () => {
    for (const err of [
      protocol('TOPIC_AUTHORIZATION_FAILED', false),
      protocol('PRODUCER_FENCED', false),
      make(KafkaJSSASLAuthenticationError, 'bad password'),
    ]) {
      const e = classifyKafkaError(err, 'connecting');
      expect([e.code, e.retriable]).toEqual(['STREAM_UNAVAILABLE', false]);
    }
  });

  it('retries a rebalance or an expired transaction epoch, which pass by themselves', () => {
    for (const type of ['REBALANCE_IN_PROGRESS', 'INVALID_PRODUCER_EPOCH', 'NOT_LEADER_FOR_PARTITION']) {
      expect(classifyKafkaError(protocol(type, type === 'NOT_LEADER_FOR_PARTITION'), 'x').retriable).toBe(true);
    }
  });

  it('passes our own errors through and calls anything else a bug', () => {
    const ours = new HooklogError('STREAM_CLOSED', 'closed');
    expect(classifyKafkaError(ours, 'x')).toBe(ours);
    const bug = classifyKafkaError(new TypeError('undefined is not a function'), 'x');
    expect([bug.code, bug.retriable]).toEqual(['INTERNAL', false]);
  });
});

describe('resolveKafkaOptions', () => {
  const base = { brokers: ['b:9092'], clientId: 'hooklog', logger: silentLogger() };
  it('fills the defaults', () => {
    const o = resolveKafkaOptions(base);
    expect(o).toMatchObject({
      replicationFactor: 1,
      minInsyncReplicas: 1,
      compression: 'gzip',
      topicPrefix: 'hooklog',
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 1_000,
    });
    // Unique per process by default: two instances from one config never share a transactional id.
    expect(o.instanceId).toBe(`${hostname()}-${process.pid}`);
    expect(o.transactionalId).toBe(`hooklog.${hostname()}-${process.pid}.tx`);
    expect(resolveKafkaOptions({ ...base, instanceId: 'pod-7' }).transactionalId).toBe('hooklog.pod-7.tx');
    expect(() => resolveKafkaOptions({ ...base, instanceId: 'a b' })).toThrow(/instanceId/);
    expect(resolveKafkaOptions({ ...base, replicationFactor: 3 }).minInsyncReplicas).toBe(2);
  });
  it('names both fields when the heartbeat is not below the session timeout', () => {
    expect(() => resolveKafkaOptions({ ...base, heartbeatIntervalMs: 10_000, sessionTimeoutMs: 10_000 })).toThrow(
      /heartbeatIntervalMs.*sessionTimeoutMs/,
    );
    expect(() => resolveKafkaOptions({ ...base, brokers: [] })).toThrow(HooklogError);
    expect(() => resolveKafkaOptions({ ...base, appendTimeoutMs: 0 })).toThrow(/appendTimeoutMs/);
  });
});

describe('record conversion', () => {
  it('round-trips key, value, headers and timestamp through the kafkajs shapes', () => {
    const m = toMessage({
      key: 'org1',
      value: Buffer.from('{"a":1}'),
      headers: { 'hooklog-org': 'org1' },
      timestamp: 1700000000000,
    });
    expect(m).toEqual({
      key: 'org1',
      value: Buffer.from('{"a":1}'),
      headers: { 'hooklog-org': 'org1' },
      timestamp: '1700000000000',
    });
    const consumed = toConsumed('t', 2, {
      key: Buffer.from('org1'),
      value: Buffer.from('{"a":1}'),
      timestamp: '1700000000000',
      offset: '41',
      attributes: 0,
      headers: { 'hooklog-org': Buffer.from('org1'), twice: [Buffer.from('a'), Buffer.from('b')] },
    } as never);
    expect(consumed).toEqual({
      topic: 't',
      partition: 2,
      offset: 41,
      key: 'org1',
      value: Buffer.from('{"a":1}'),
      timestamp: 1700000000000,
      headers: { 'hooklog-org': 'org1', twice: 'b' },
    });
    expect(
      toConsumed('t', 0, { key: null, value: null, timestamp: '1', offset: '0', attributes: 0, headers: {} } as never),
    ).toMatchObject({ key: null, value: Buffer.alloc(0) });
    // An empty value is a tombstone on the wire, and an empty value again when read.
    expect(toMessage({ key: 'acme/user/00u1', value: Buffer.alloc(0), headers: {} }).value).toBeNull();
  });

  it('splits large appends into requests under the byte limit, keeping order', () => {
    const recs = Array.from({ length: 10 }, (_, i) => ({
      key: 'k',
      value: Buffer.alloc(300, i),
      headers: { n: String(i) },
    }));
    const chunks = chunkRecords(recs, 1000);
    expect(chunks.flat()).toEqual(recs);
    for (const c of chunks) expect(c.reduce((n, r) => n + recordBytes(r), 0)).toBeLessThanOrEqual(1000);
    expect(chunks.length).toBeGreaterThan(1);
    const huge = { key: null, value: Buffer.alloc(5000), headers: {} };
    expect(chunkRecords([huge], 1000)).toEqual([[huge]]);
    expect(chunkRecords([], 1000)).toEqual([]);
  });

  it('cuts an atomic append into requests under the byte limit: write order kept, the cursor in the last', () => {
    const rec = (tag: string, bytes: number) => ({ key: 'org', value: Buffer.alloc(bytes, tag), headers: {} });
    const events = Array.from({ length: 7 }, (_, i) => rec(String(i), 300));
    const cursor = rec('c', 50);
    const writes = [
      { topic: 'logs', records: events },
      { topic: 'dead', records: [] },
      { topic: 'cursors', records: [cursor] },
    ];
    const requests = transactionRequests(writes, 1000);
    expect(requests.length).toBe(4); // 335 bytes an event: two a request, the seventh with the cursor
    for (const r of requests) {
      const bytes = r.flatMap((t) => t.messages).reduce((n, m) => n + (m.value as Buffer).length + 3 + 32, 0);
      expect(bytes).toBeLessThanOrEqual(1000);
    }
    // Flattened back, the requests are the writes, in order; a topic appears once per request.
    const flat = requests.flatMap((r) => r.flatMap((t) => t.messages.map((m) => [t.topic, m.value])));
    expect(flat).toEqual([...events.map((e) => ['logs', e.value]), ['cursors', cursor.value]]);
    expect(requests.at(-1)!.map((t) => t.topic)).toEqual(['logs', 'cursors']);
    expect(transactionRequests([{ topic: 'logs', records: [] }], 1000)).toEqual([]);
    // One record between the request size and the record limit goes alone; one over the limit is refused.
    expect(transactionRequests([{ topic: 'logs', records: [rec('a', 2000)] }], 1000)).toHaveLength(1);
    const over = rec('x', MAX_RECORD_BYTES);
    expect(() => transactionRequests([{ topic: 'logs', records: [over] }], 1000)).toThrow(
      expect.objectContaining({ code: 'STREAM_APPEND_FAILED', retriable: false }),
    );
  });

  it('keeps a dead letter whole when it fits, else its first 64 KiB with its size in a header', () => {
    const small = { key: 'org', value: Buffer.from('{"bad":1}'), headers: { [Header.reason]: 'why' } };
    expect(storableLetter(small)).toBe(small);
    const value = Buffer.alloc(MAX_RECORD_BYTES, 'y');
    const cut = storableLetter({ ...small, value });
    expect(cut.value).toEqual(value.subarray(0, TRUNCATED_LETTER_BYTES));
    expect(cut.headers).toEqual({ [Header.reason]: 'why', [Header.truncatedFromBytes]: String(value.length) });
    expect(recordBytes(cut)).toBeLessThanOrEqual(MAX_RECORD_BYTES);
  });
});
