/**
 * Engine state checkpoints on the compacted `<prefix>.alerting-state` topic,
 * one record per (group, logs partition): the engine state after the batch
 * and the next offset to evaluate. A checkpoint is appended in ONE atomic
 * write together with the alerts of the same batch (Kafka transaction;
 * embedded: one fsynced frame), so either both exist or neither does:
 *
 * - crash before the write: the batch is redelivered and re-evaluated from
 *   the previous checkpoint → same alerts, same ids, written once;
 * - crash after the write, before the offset commit: the batch is
 *   redelivered, but records below the checkpoint's `nextOffset` are skipped,
 *   so its alerts are not written again.
 *
 * That is what makes "exactly one alert per finding" hold on the alerts topic
 * across kill -9, without any dedup downstream.
 */
import type { ConsumedRecord, Stream } from '../../platform/stream/types.js';
import { emptyState, type EngineState } from './engine.js';

export interface Checkpoint {
  readonly nextOffset: number;
  readonly state: EngineState;
}

export function checkpointKey(group: string, topic: string, partition: number): string {
  return `${group}/${topic}/${partition}`;
}

export function decodeCheckpoint(rec: ConsumedRecord | undefined): Checkpoint {
  if (!rec) return { nextOffset: 0, state: emptyState() };
  const cp = JSON.parse(rec.value.toString('utf8')) as Checkpoint;
  return { nextOffset: cp.nextOffset, state: cp.state };
}

/** Latest checkpoint of every partition of `topic` for `group`, read from the start of the state topic. */
export async function readCheckpoints(
  stream: Stream,
  stateTopic: string,
  group: string,
  topic: string,
): Promise<Map<number, Checkpoint>> {
  const latest = await stream.readLatestByKey(stateTopic);
  const out = new Map<number, Checkpoint>();
  const prefix = `${group}/${topic}/`;
  for (const [key, rec] of latest) {
    if (key.startsWith(prefix)) out.set(Number(key.slice(prefix.length)), decodeCheckpoint(rec));
  }
  return out;
}
