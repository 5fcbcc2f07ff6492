/**
 * A consumer whose partitions are owned work, as alerting's engine consumer
 * owns its logs partitions: the group shares the partitions out, and the
 * instance handling a partition claims it (`Stream.claim`, transactional id
 * `<state topic>.<group>.<partition>`) before reading its checkpoint, so what
 * it reads is final and an earlier owner can write nothing after the claim.
 * Records arrive in offset order per partition (records are keyed by org, so
 * one org is one partition: one sender per org). The handler moves the
 * partition's state forward through `step` (records + checkpoint, atomically);
 * a record it handles without a step leaves no trace and is simply handled
 * again, the same way, after a restart.
 */
import type { ConsumedRecord, Consumer, RecordBatch, Stream, StreamRecord } from '../../platform/stream/types.js';
import { retry, RetryPolicies } from '../../platform/retry.js';
import { isRetriable } from '../../platform/errors.js';
import { PartitionLedger, checkpointKey, readCheckpoint } from './checkpoint.js';

const STARTUP = { policy: RetryPolicies.startup, retriable: isRetriable };

export interface Owned<S> {
  readonly partition: number;
  /** The first offset not yet handled (in memory: ahead of the checkpoint after records that needed no step). */
  nextOffset: number;
  /** The state as of the last step (never mutated in place: `step` replaces it). */
  state: S;
  /** Appends `writes` and the checkpoint {nextOffset, state} atomically, then makes them current here. */
  step(
    writes: ReadonlyArray<{ topic: string; records: readonly StreamRecord[] }>,
    next: { nextOffset: number; state: S },
  ): Promise<void>;
}

export interface OwnedConsumerOptions<S> {
  readonly stream: Stream;
  readonly topic: string;
  readonly group: string;
  readonly stateTopic: string;
  readonly initial: () => S;
  readonly handle: (rec: ConsumedRecord, owned: Owned<S>) => Promise<void>;
  readonly maxBatchRecords?: number;
  readonly maxBatchWaitMs?: number;
  readonly onHandlerError?: (err: unknown, batch: RecordBatch, attempt: number) => void;
}

export async function startOwnedConsumer<S>(o: OwnedConsumerOptions<S>): Promise<Consumer> {
  const slots = new Map<number, Owned<S> & { ledger: PartitionLedger<S> }>();
  const reload = new Set<number>();
  // The state topic has (at least) the input's partitions; a topic made elsewhere with fewer is shared round-robin.
  const statePartitions = (await retry(() => o.stream.latestOffsets(o.stateTopic), STARTUP)).size;

  const open = async (partition: number) => {
    const old = slots.get(partition);
    slots.delete(partition);
    await old?.ledger.close();
    const claim = await o.stream.claim(`${o.stateTopic}.${o.group}.${partition}`);
    const key = checkpointKey(o.group, o.topic, partition, statePartitions);
    const ledger = new PartitionLedger<S>(claim, o.stateTopic, key);
    const cp = await readCheckpoint(o.stream, o.stateTopic, key, partition % statePartitions, o.initial);
    const slot: Owned<S> & { ledger: PartitionLedger<S> } = {
      partition,
      nextOffset: cp.nextOffset,
      state: cp.state,
      ledger,
      step: async (writes, next) => {
        try {
          await ledger.step(writes, next);
        } catch (err) {
          // The write may still have landed (a time-out after the commit): the checkpoint says where we are.
          reload.add(partition);
          throw err;
        }
        slot.nextOffset = next.nextOffset;
        slot.state = next.state;
      },
    };
    slots.set(partition, slot);
    reload.delete(partition);
    return slot;
  };

  const handler = async (batch: RecordBatch) => {
    let slot = slots.get(batch.partition);
    // New to us (assigned since: another member may have handled it meanwhile) or a failed write: claim, then read.
    // Not on an offset gap: transactions leave one (their commit markers take offsets), and a claim costs a round
    // trip to the transaction coordinator.
    if (!slot || reload.has(batch.partition)) slot = await open(batch.partition);
    for (const rec of batch.records) {
      if (rec.offset < slot.nextOffset) continue;
      await o.handle(rec, slot);
      if (slot.nextOffset <= rec.offset) slot.nextOffset = rec.offset + 1;
    }
  };

  const [, consumer] = await Promise.all([
    o.stream.follow(o.stateTopic),
    o.stream.consume({
      topic: o.topic,
      group: o.group,
      handler,
      maxBatchRecords: o.maxBatchRecords ?? 100,
      maxBatchWaitMs: o.maxBatchWaitMs ?? 50,
      ...(o.onHandlerError ? { onHandlerError: o.onHandlerError } : {}),
      onAssigned: (ps) => ps.forEach((p) => reload.add(p)),
      onRevoked: (ps) => ps.forEach((p) => reload.add(p)),
    }),
  ]);
  return {
    stop: async () => {
      await consumer.stop();
      await Promise.all([...slots.values()].map((s) => s.ledger.close()));
      slots.clear();
    },
  };
}
