import type { Admin } from 'kafkajs';
import { HooklogError, isRetriable } from '../../errors.js';
import { RetryPolicies, retry } from '../../retry.js';

/**
 * Kafka protocol error types that no retry can fix: the record itself, the
 * credentials or the configuration is wrong. Everything else Kafka reports
 * (lost connections, leader moves, timeouts, rebalances, retries exhausted) is
 * treated as "the stream is unavailable for now", and callers retry or answer
 * 503 — an acknowledged event must never be dropped on a transient error.
 */
const RECORD_REJECTED = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'CORRUPT_MESSAGE',
  'INVALID_TIMESTAMP',
  'INVALID_REQUIRED_ACKS',
  'UNSUPPORTED_COMPRESSION_TYPE',
  'UNSUPPORTED_FOR_MESSAGE_FORMAT',
]);
const MISCONFIGURED = new Set([
  'TOPIC_AUTHORIZATION_FAILED',
  'GROUP_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'SASL_AUTHENTICATION_FAILED',
  'ILLEGAL_SASL_STATE',
  'UNSUPPORTED_SASL_MECHANISM',
  'UNSUPPORTED_VERSION',
  'POLICY_VIOLATION',
  'INVALID_CONFIG',
  'INVALID_TOPIC_EXCEPTION',
  'INVALID_REPLICATION_FACTOR',
  'INVALID_PARTITIONS',
  // Another producer took over our transactional id: two instances share one id. (INVALID_PRODUCER_EPOCH
  // is left retriable: brokers also answer it when a transaction timed out, and the retry gets a new epoch.)
  'PRODUCER_FENCED',
]);
const MISCONFIGURED_NAMES = new Set([
  'KafkaJSSASLAuthenticationError',
  'KafkaJSServerDoesNotSupportApiKey',
  'KafkaJSNotImplemented',
]);

interface KafkaJSLike {
  name: string;
  message: string;
  type?: string;
  retriable?: boolean;
  cause?: unknown;
  errors?: unknown[];
}

function isKafkaJS(err: unknown): err is KafkaJSLike {
  return err instanceof Error && /^KafkaJS/.test(err.name);
}

/** The error and everything it wraps (kafkajs nests causes and aggregates errors per topic). */
function chain(err: unknown): KafkaJSLike[] {
  const out: KafkaJSLike[] = [];
  const queue: unknown[] = [err];
  while (queue.length > 0 && out.length < 20) {
    const e = queue.shift();
    if (!isKafkaJS(e)) continue;
    out.push(e);
    if (e.cause && e.cause !== e) queue.push(e.cause);
    if (Array.isArray(e.errors)) queue.push(...e.errors);
  }
  return out;
}

/**
 * The one place kafkajs failures become hooklog errors.
 * - record rejected by the broker (too large, invalid) → STREAM_APPEND_FAILED, not retriable;
 * - credentials, authorisation, fencing, unsupported broker → STREAM_UNAVAILABLE, not retriable;
 * - any other Kafka failure → STREAM_UNAVAILABLE, retriable;
 * - a non-Kafka error (a bug of ours) → INTERNAL, not retriable.
 * A HooklogError passes through unchanged.
 */
export function classifyKafkaError(err: unknown, action: string): HooklogError {
  if (err instanceof HooklogError) return err;
  const errors = chain(err);
  if (errors.length === 0) {
    return new HooklogError('INTERNAL', `${action}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  const root = errors[errors.length - 1]!;
  const detail = root.type ? `${root.type}: ${root.message}` : root.message;
  if (errors.some((e) => e.type !== undefined && RECORD_REJECTED.has(e.type))) {
    return new HooklogError('STREAM_APPEND_FAILED', `${action}: Kafka rejected the records (${detail})`, {
      retriable: false,
      cause: err,
    });
  }
  if (errors.some((e) => (e.type !== undefined && MISCONFIGURED.has(e.type)) || MISCONFIGURED_NAMES.has(e.name))) {
    return new HooklogError(
      'STREAM_UNAVAILABLE',
      `${action}: Kafka refused us (${detail}); check credentials, ACLs and transactional ids`,
      { retriable: false, cause: err },
    );
  }
  return new HooklogError('STREAM_UNAVAILABLE', `${action}: ${detail}`, { retriable: true, cause: err });
}

/**
 * Kafka's answers to a producer whose transactional id was claimed by a newer
 * producer (a higher epoch): it is a zombie and must stop, not retry.
 */
const FENCED = new Set(['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH']);

export function isFencedError(err: unknown): boolean {
  return chain(err).some((e) => e.type !== undefined && FENCED.has(e.type));
}

/**
 * A topic's offsets per partition (kafkajs admin `fetchTopicOffsets`), retrying what is retriable. Right
 * after a topic is created its partitions have no leader yet for a moment, and kafkajs's admin passes
 * NOT_LEADER_FOR_PARTITION (or UNKNOWN_TOPIC_OR_PARTITION) straight back; a start-up that reads a
 * topic it has just created must wait that out, not die of it.
 */
export async function topicOffsets(
  admin: Pick<Admin, 'fetchTopicOffsets'>,
  topic: string,
): Promise<Awaited<ReturnType<Admin['fetchTopicOffsets']>>> {
  return retry(
    async () => {
      try {
        return await admin.fetchTopicOffsets(topic);
      } catch (err) {
        throw classifyKafkaError(err, `reading the end offsets of ${topic}`);
      }
    },
    { policy: RetryPolicies.startup, retriable: isRetriable },
  );
}
