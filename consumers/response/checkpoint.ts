/**
 * Checkpoints of the response consumers, one record per (group, input topic,
 * partition): the next offset to handle and the partition's state (a SET held
 * for delivery; the open actions). Every checkpoint is appended in ONE atomic
 * write with the records of the step it ends (action records, delivery
 * outcomes, dead letters), through the claim of the partition's work, so a
 * crash leaves either both or neither, and an instance that lost the partition
 * can write neither once the new owner claimed.
 *
 * Each consumer has a state topic of its own with as many partitions as its
 * input, and the checkpoint of input partition p is keyed to land on state
 * partition p: only p's owner writes there. A read after a claim waits for the
 * partition's last stable offset, which another owner's open transaction would
 * hold back, hiding checkpoints committed after it: a single state partition
 * shared by concurrent owners (the transmitter and the executor of one
 * process, say) returned a checkpoint older than the last one written, and an
 * action ran twice (test/e2e/response-fleet.test.ts, 6 of 6 runs).
 */
import { partitionFor } from '../../platform/stream/embedded/partitioner.js';
import type { ConsumedRecord, Stream, StreamRecord, Transactor } from '../../platform/stream/types.js';

/**
 * The checkpoint key of `partition`: `<group>/<topic>/<partition>`, with a `#n` suffix chosen so that the key
 * lands on state partition `partition % statePartitions` (Kafka's murmur2, as every stream partitions keys).
 */
export function checkpointKey(group: string, topic: string, partition: number, statePartitions: number): string {
  const target = partition % statePartitions;
  for (let n = 0; ; n++) {
    const key = `${group}/${topic}/${partition}#${n}`;
    if (partitionFor(key, statePartitions) === target) return key;
  }
}

export interface Checkpoint<S> {
  readonly nextOffset: number;
  readonly state: S;
}

/** The latest checkpoint of `partition` (read after claiming it), or `initial` at offset 0. */
export async function readCheckpoint<S>(
  stream: Stream,
  stateTopic: string,
  key: string,
  statePartition: number,
  initial: () => S,
): Promise<Checkpoint<S>> {
  const latest = await stream.readLatestByKey(stateTopic, [statePartition]);
  const rec: ConsumedRecord | undefined = latest.get(key);
  if (!rec || rec.value.length === 0) return { nextOffset: 0, state: initial() };
  const cp = JSON.parse(rec.value.toString('utf8')) as Checkpoint<S>;
  return { nextOffset: cp.nextOffset, state: cp.state };
}

/** A partition's claim, its checkpoint key and topics: one atomic step = records + the checkpoint after it. */
export class PartitionLedger<S> {
  readonly #claim: Transactor;
  readonly #stateTopic: string;
  readonly #key: string;

  constructor(claim: Transactor, stateTopic: string, key: string) {
    this.#claim = claim;
    this.#stateTopic = stateTopic;
    this.#key = key;
  }

  /** Appends `writes` and the checkpoint atomically (STREAM_FENCED once another owner claimed). */
  async step(writes: ReadonlyArray<{ topic: string; records: readonly StreamRecord[] }>, cp: Checkpoint<S>) {
    await this.#claim.appendAtomically([
      ...writes.filter((w) => w.records.length > 0),
      { topic: this.#stateTopic, records: [{ key: this.#key, value: Buffer.from(JSON.stringify(cp)), headers: {} }] },
    ]);
  }

  close(): Promise<void> {
    return this.#claim.close();
  }
}

/** Keeps the newest `max` ids (oldest dropped first). */
export function remember(ids: readonly string[], id: string, max: number): readonly string[] {
  const next = ids.includes(id) ? ids : [...ids, id];
  return next.length > max ? next.slice(next.length - max) : next;
}
