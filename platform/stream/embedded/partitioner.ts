/**
 * Partition choice for keyed records: Kafka's default, `toPositive(murmur2(key))
 * % partitions`, so a key lands on the same partition number here as with a
 * Kafka producer. (A CRC is a poor choice: keys that differ in one character,
 * like org1/org2, share low bits and so share partitions.)
 */

/** Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as a signed 32-bit int. */
export function murmur2(data: Uint8Array): number {
  const m = 0x5bd1e995;
  const length = data.length;
  let h = (0x9747b28c ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  switch (length & 3) {
    case 3:
      h ^= data[whole + 2]! << 16;
    // falls through
    case 2:
      h ^= data[whole + 1]! << 8;
    // falls through
    case 1:
      h ^= data[whole]!;
      h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition for a keyed record: stable, and the same as Kafka's default partitioner. */
export function partitionFor(key: string, partitions: number): number {
  return (murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % partitions;
}
