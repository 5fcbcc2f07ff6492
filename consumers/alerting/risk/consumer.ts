/**
 * The risk fold as a stream consumer: its own group on `<prefix>.alerts`
 * (alerts are keyed by org, so an org's findings, and so its users' states,
 * belong to one alerts partition), one claimed owner per partition.
 *
 * Exactly once: each change is decided by the partition's owner and written
 * ONCE, in one atomic append with the entity states it leaves and the
 * checkpoint of the alerts it folded (records.ts). The owner claims the
 * partition (fencing whoever folded it before) and only then reads the
 * checkpoint and states, so a restart or a hand-over starts from exactly what
 * was written; a redelivered batch skips alerts below the checkpoint.
 *
 * Falling levels: contributions expire by the wall clock (event time + ttl),
 * so an org that sends nothing still sees its users' levels fall. The owner
 * of a partition (ConsumeOptions.onAssigned) checks every
 * `expiry_check_interval_ms` for contributions due and appends their changes
 * (and states) through the same claim. The changes an expiry makes derive
 * from the contribution and its instant alone (fold.ts), so one derived again
 * after a crash, by this owner or the next, has the same change_id; and it is
 * only derived again if its write did not land (the state read back still
 * holds the contribution).
 */
import { partitionFor } from '../../../platform/stream/embedded/partitioner.js';
import type { Consumer, RecordBatch, Stream, StreamRecord, Transactor } from '../../../platform/stream/types.js';
import { riskKey, type RiskChange, type RiskState } from '../../../schemas/risk.js';
import { applyFinding, expire, nextExpiry } from './fold.js';
import { changeRecord, checkpointRecord, readAlert, readPartitionStart, stateRecord } from './records.js';
import type { RiskTelemetry } from './telemetry.js';

export interface RiskFoldOptions {
  readonly stream: Stream;
  readonly alertsTopic: string;
  /** `<prefix>.alerting-state`: where the checkpoint lives. */
  readonly stateTopic: string;
  readonly riskTopic: string;
  readonly changesTopic: string;
  /** The consumer group (`<alerting group>.risk`), also naming the claims and checkpoints. */
  readonly group: string;
  readonly maxBatchRecords: number;
  readonly expiryCheckIntervalMs: number;
  readonly telemetry: RiskTelemetry;
  /** Wall clock (tests). */
  readonly now?: () => number;
}

interface Part {
  readonly claim: Transactor;
  nextOffset: number;
  readonly states: Map<string, RiskState>;
  /** Earliest expiry among the states (epoch ms). */
  due: number;
}

/** The earliest expiry among `states` (epoch ms), Infinity for none. */
function earliest(states: ReadonlyMap<string, RiskState>): number {
  let due = Infinity;
  for (const s of states.values()) due = Math.min(due, nextExpiry(s));
  return due;
}

export async function startRiskFold(o: RiskFoldOptions): Promise<Consumer> {
  const now = o.now ?? Date.now;
  const partitions = (await o.stream.latestOffsets(o.alertsTopic)).size;
  const parts = new Map<number, Part>();
  /** Partitions this member reads now: the ones whose expiries it watches. */
  const owned = new Set<number>();
  /** One operation at a time per partition: batches, expiry checks, hand-overs. */
  const chains = new Map<number, Promise<unknown>>();
  const serial = <T>(p: number, fn: () => Promise<T>): Promise<T> => {
    const run = (chains.get(p) ?? Promise.resolve()).then(fn, fn);
    chains.set(
      p,
      run.catch(() => undefined),
    );
    return run;
  };
  const where = { ...o, partitions };

  const load = async (p: number): Promise<Part> => {
    const had = parts.get(p);
    if (had) return had;
    const claim = await o.stream.claim(`${o.stateTopic}.${o.group}.${p}`, () => owned.has(p));
    try {
      const start = await readPartitionStart(o.stream, where, p, o.telemetry.ignoredState);
      const part: Part = { claim, nextOffset: start.nextOffset, states: start.states, due: Infinity };
      part.due = earliest(start.states);
      parts.set(p, part);
      return part;
    } catch (err) {
      await claim.close();
      throw err;
    }
  };
  const drop = async (p: number) => {
    const part = parts.get(p);
    parts.delete(p);
    await part?.claim.close();
  };

  /** Appends states, changes and (for a batch) the checkpoint through the claim, then makes them ours. */
  const write = async (
    p: number,
    part: Part,
    states: ReadonlyMap<string, RiskState | null>,
    changes: readonly RiskChange[],
    next?: number,
  ) => {
    const records: StreamRecord[] = [];
    for (const [key, s] of states) records.push(stateRecord(key, s, s?.org ?? part.states.get(key)?.org ?? ''));
    try {
      await part.claim.appendAtomically([
        ...(records.length ? [{ topic: o.riskTopic, records }] : []),
        ...(changes.length ? [{ topic: o.changesTopic, records: changes.map(changeRecord) }] : []),
        ...(next !== undefined
          ? [{ topic: o.stateTopic, records: [checkpointRecord(o.group, o.alertsTopic, p, next)] }]
          : []),
      ]);
    } catch (err) {
      // It may still have landed: the next operation claims again and reads what the topics hold.
      o.telemetry.writeFailed(p, err);
      await drop(p);
      throw err;
    }
    for (const [key, s] of states) {
      if (s) part.states.set(key, s);
      else part.states.delete(key);
    }
    part.due = earliest(part.states);
    if (next !== undefined) part.nextOffset = next;
    o.telemetry.changed(p, changes);
  };

  /** The expiries due at `at` in every state of the partition, into `states` and `changes`. */
  const expireDue = (part: Part, at: number, states: Map<string, RiskState | null>, changes: RiskChange[]) => {
    if (part.due > at) return;
    for (const [key, s] of part.states) {
      const step = expire(s, at);
      if (!step) continue;
      states.set(key, step.state);
      changes.push(...step.changes);
    }
  };

  const handler = (batch: RecordBatch) =>
    serial(batch.partition, async () => {
      const p = batch.partition;
      let part = await load(p);
      if (batch.firstOffset > part.nextOffset) {
        // A gap: another member folded this partition since we read it. Claim again and read what it wrote.
        await drop(p);
        part = await load(p);
      }
      const at = now();
      const states = new Map<string, RiskState | null>();
      const changes: RiskChange[] = [];
      expireDue(part, at, states, changes);
      let expired = 0;
      for (const rec of batch.records) {
        if (rec.offset < part.nextOffset) continue;
        const a = readAlert(rec.value);
        if (a === null) continue;
        if (typeof a === 'string') {
          o.telemetry.invalid(p, rec.offset, a);
          continue;
        }
        if (Date.parse(a.risk!.expires_at) <= at) expired++;
        const key = riskKey(a.org, a.risk!.entity);
        // A stray org (another partition's) would be another owner's to fold: never here, as alerts are keyed by org.
        if (partitionFor(a.org, partitions) !== p) continue;
        const prior = states.has(key) ? states.get(key)! : (part.states.get(key) ?? null);
        const step = applyFinding(prior, a, at);
        if (!step) continue;
        states.set(key, step.state);
        changes.push(...step.changes);
      }
      o.telemetry.expiredOnArrival(expired);
      const next = batch.lastOffset + 1;
      if (states.size === 0) {
        // Nothing to write: a redelivery would find nothing again.
        part.nextOffset = Math.max(part.nextOffset, next);
        return;
      }
      await write(p, part, states, changes, next);
    });

  /** Partitions with an expiry check queued: one at a time, so a slow claim (a broker down) queues nothing more. */
  const checking = new Set<number>();
  const checkExpiries = () => {
    for (const p of owned) {
      const part = parts.get(p);
      if ((part && part.due > now()) || checking.has(p)) continue;
      checking.add(p);
      // Not loaded yet (assigned, no alerts since): claim and read it, so a quiet partition's levels fall too.
      void serial(p, async () => {
        if (!owned.has(p)) return;
        const loaded = await load(p);
        const at = now();
        const states = new Map<string, RiskState | null>();
        const changes: RiskChange[] = [];
        expireDue(loaded, at, states, changes);
        if (states.size > 0) await write(p, loaded, states, changes);
      })
        .catch((err: unknown) => o.telemetry.log.warn({ partition: p, err }, 'risk expiry check failed; retrying'))
        .finally(() => checking.delete(p));
    }
  };
  const timer = setInterval(checkExpiries, o.expiryCheckIntervalMs);
  timer.unref();

  // The state topics' readers start now, beside the consumer: a hand-over then reads them without waiting.
  await Promise.all([o.stream.follow(o.stateTopic), o.stream.follow(o.riskTopic)]);
  const consumer = await o.stream.consume({
    topic: o.alertsTopic,
    group: o.group,
    handler,
    maxBatchRecords: o.maxBatchRecords,
    maxBatchWaitMs: 100,
    onAssigned: (ps) => {
      for (const p of ps) {
        owned.add(p);
        // Claim again on the first operation: someone else may have folded it meanwhile.
        void serial(p, () => drop(p));
      }
      checkExpiries();
    },
    onRevoked: (ps) => {
      for (const p of ps) {
        owned.delete(p);
        void serial(p, () => drop(p));
      }
    },
    onHandlerError: (err, batch, attempt) =>
      o.telemetry.log.warn({ partition: batch.partition, attempt, err }, 'risk batch failed; retrying'),
  });
  return {
    stop: async () => {
      clearInterval(timer);
      await consumer.stop();
      await Promise.all([...chains.values()]);
      await Promise.all([...parts.keys()].map(drop));
    },
  };
}
