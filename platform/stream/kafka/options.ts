import { hostname } from 'node:os';
import { HooklogError } from '../../errors.js';
import type { Logger } from '../../log.js';

/** What a Kafka consumer of ours does about its partitions; for tests and metrics. */
export type KafkaConsumerEvent =
  | { type: 'assigned'; consumer: string; memberId: string; partitions: number[] }
  | { type: 'revoked'; consumer: string; partitions: number[]; reason: string }
  | { type: 'paused' | 'resumed'; consumer: string; partition: number }
  /** kafkajs gave the member up after an error it does not retry; a new kafkajs consumer joins (supervisor.ts). */
  | { type: 'replaced'; consumer: string; attempt: number; error: string }
  | {
      type: 'commit-issued' | 'commit-succeeded' | 'commit-failed';
      consumer: string;
      partition: number;
      offset: number;
    };

export interface KafkaStreamOptions {
  /** Bootstrap brokers, `host:port`. */
  brokers: string[];
  /** Kafka client id; also the base of the transactional id and of short-lived reader groups. */
  clientId: string;
  /** hooklog's topic prefix; names the groups of the latest-by-key readers (table.ts). Default `hooklog`. */
  topicPrefix?: string;
  /** Connect with TLS (system CAs). Default false. */
  ssl?: boolean;
  sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
  /**
   * Replicas for topics `ensureTopics` creates. Default 1 (a single test or dev
   * broker); use 3 in production, where topics also get min.insync.replicas=2 so
   * that acks=all means "on two brokers".
   */
  replicationFactor?: number;
  /**
   * How long `append`/`appendAtomically` wait for the broker's acknowledgement
   * before rejecting with a retriable STREAM_UNAVAILABLE. Default 10 000. A send
   * already on the wire keeps retrying in the background (see kafka-stream.ts).
   */
  appendTimeoutMs?: number;
  /**
   * Compression of produced batches. Default `gzip`: event JSON shrinks several
   * times, kafkajs has gzip built in (others need native codecs), and zlib runs
   * off the main thread. `none` saves CPU where the network is not the limit.
   */
  compression?: 'gzip' | 'none';
  /**
   * This process's name among the instances sharing the cluster: part of the
   * transactional id of `appendAtomically` (work-bound appends use `claim`,
   * whose ids follow the work instead). Default `<hostname>-<pid>`: unique for
   * instances started side by side from one config. Set a stable one per
   * instance (a pod name) so that a restart fences its own zombie there too.
   */
  instanceId?: string;
  /** Transactional id for `appendAtomically`. Default `<clientId>.<instanceId>.tx`. */
  transactionalId?: string;
  /**
   * Consumer group session time-out: how long a dead member (kill -9, cut off)
   * keeps its partitions before the group moves them. Default 10 000 (the
   * broker's minimum is group.min.session.timeout.ms, 6 000 by default).
   */
  sessionTimeoutMs?: number;
  /** Consumer heartbeat interval; a rebalance is noticed within about this long. Default 1 000. */
  heartbeatIntervalMs?: number;
  /** Longest a fetch waits for new records; also bounds how long stopping a consumer takes. Default 500. */
  fetchMaxWaitMs?: number;
  /**
   * Records waiting to be sent (appends are sent one request at a time, see send-queue.ts); above this, appends fail
   * fast. Default 50 000.
   */
  maxQueuedRecords?: number;
  /**
   * Idempotent producers `append` spreads appends over, by the key of an
   * append's first record (see kafka-stream.ts), each with one request in flight
   * (see send-queue.ts). Default 4: one producer waits for every acknowledgement
   * in turn.
   */
  producers?: number;
  logger: Logger;
  /** Told about assignments, revocations and commits of this stream's consumers. */
  observer?: (event: KafkaConsumerEvent) => void;
}

export type ResolvedKafkaOptions = Required<Omit<KafkaStreamOptions, 'sasl' | 'observer'>> &
  Pick<KafkaStreamOptions, 'sasl' | 'observer'> & { minInsyncReplicas: number };

function positive(name: string, v: number): number {
  if (!Number.isFinite(v) || v <= 0)
    throw new HooklogError('CONFIG_INVALID', `kafka stream: ${name} must be a positive number, got ${v}`);
  return v;
}

function positiveInteger(name: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0)
    throw new HooklogError('CONFIG_INVALID', `kafka stream: ${name} must be a positive integer, got ${v}`);
  return v;
}

/** Fills defaults and rejects values that would only fail later, naming the option. */
export function resolveKafkaOptions(o: KafkaStreamOptions): ResolvedKafkaOptions {
  if (o.brokers.length === 0)
    throw new HooklogError('CONFIG_INVALID', 'kafka stream: brokers must name at least one host:port');
  if (!o.clientId) throw new HooklogError('CONFIG_INVALID', 'kafka stream: clientId must not be empty');
  const replicationFactor = positive('replicationFactor', o.replicationFactor ?? 1);
  const sessionTimeoutMs = positive('sessionTimeoutMs', o.sessionTimeoutMs ?? 10_000);
  const heartbeatIntervalMs = positive(
    'heartbeatIntervalMs',
    o.heartbeatIntervalMs ?? Math.min(1_000, Math.floor(sessionTimeoutMs / 3)),
  );
  const instanceId = o.instanceId ?? `${hostname()}-${process.pid}`;
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(instanceId)) {
    throw new HooklogError(
      'CONFIG_INVALID',
      `kafka stream: instanceId must be 1-200 of letters, digits, . _ -, got "${instanceId}"`,
    );
  }
  if (heartbeatIntervalMs >= sessionTimeoutMs) {
    throw new HooklogError(
      'CONFIG_INVALID',
      `kafka stream: heartbeatIntervalMs (${heartbeatIntervalMs}) must be below sessionTimeoutMs (${sessionTimeoutMs})`,
    );
  }
  return {
    brokers: o.brokers,
    clientId: o.clientId,
    topicPrefix: o.topicPrefix ?? 'hooklog',
    ssl: o.ssl ?? false,
    sasl: o.sasl,
    replicationFactor,
    minInsyncReplicas: replicationFactor > 2 ? 2 : 1,
    appendTimeoutMs: positive('appendTimeoutMs', o.appendTimeoutMs ?? 10_000),
    compression: o.compression ?? 'gzip',
    instanceId,
    transactionalId: o.transactionalId ?? `${o.clientId}.${instanceId}.tx`,
    sessionTimeoutMs,
    heartbeatIntervalMs,
    fetchMaxWaitMs: positive('fetchMaxWaitMs', o.fetchMaxWaitMs ?? 500),
    maxQueuedRecords: positive('maxQueuedRecords', o.maxQueuedRecords ?? 50_000),
    producers: positiveInteger('producers', o.producers ?? 4),
    logger: o.logger,
    observer: o.observer,
  };
}
