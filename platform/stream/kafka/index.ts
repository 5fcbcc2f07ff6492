/**
 * Apache Kafka behind the Stream seam. `openKafkaStream` connects and returns a
 * Stream; see kafka-stream.ts (producing), consumer.ts (group consumption and
 * rebalancing) and errors.ts (how kafkajs failures become hooklog errors).
 */
import type { Stream } from '../types.js';
import { KafkaStream } from './kafka-stream.js';
import type { KafkaStreamOptions } from './options.js';

export type { KafkaConsumerEvent, KafkaStreamOptions } from './options.js';

/** Connects to the brokers; rejects with STREAM_UNAVAILABLE when none answers. */
export function openKafkaStream(options: KafkaStreamOptions): Promise<Stream> {
  return KafkaStream.open(options);
}
