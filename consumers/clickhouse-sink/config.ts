import { z } from 'zod';

const slug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');

/** The `sink:` section: the consumer that writes the stream into ClickHouse. */
export const sinkSchema = z
  .strictObject({
    group: slug.default('hooklog-clickhouse-sink').describe('Consumer group of the ClickHouse sink.'),
    max_batch_records: z.number().int().min(1).max(100_000).default(5000).describe('Largest insert per partition.'),
    max_batch_wait_ms: z
      .number()
      .int()
      .min(10)
      .max(60_000)
      .default(1000)
      .describe(
        'At most one partial batch per partition per this interval: a partial batch is inserted once this long has passed since the previous batch was cut, so the first events after a quiet spell are inserted at once.',
      ),
    fetch_max_bytes_per_partition: z
      .number()
      .int()
      .min(64 * 1024)
      .max(64 * 1024 * 1024)
      .default(4 * 1024 * 1024)
      .describe(
        "Kafka: the most one fetch of the events topic brings per partition, in (compressed) bytes. 4 MiB fills a 5,000-event batch in one round trip (kafkajs defaults to 1 MiB: a batch took several fetches, and time cut it short); one fetch holds at most four partitions' worth (16 MiB) whatever the number of partitions.",
      ),
    max_record_bytes: z
      .number()
      .int()
      .min(1024)
      .max(256 * 1024 * 1024)
      .default(1024 * 1024)
      .describe(
        'A record larger than this can never be inserted: it goes to the deadletter topic (RECORD_INVALID) with its bytes, without blocking its partition.',
      ),
  })
  .prefault({})
  .describe('The consumer that writes the stream into ClickHouse.');
