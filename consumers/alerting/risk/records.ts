/**
 * The risk fold's records: what it appends (entity states, changes, its
 * checkpoint) and how it reads them back after claiming a partition.
 *
 * The checkpoint (`<group>/<alerts topic>/<partition>` on the compacted
 * `<prefix>.alerting-state`, value `{"nextOffset":N}`) is appended in the
 * same atomic write as the states and changes a batch of alerts made, so a
 * batch redelivered after a crash skips the alerts it already folded.
 */
import { Header } from '../../../platform/stream/headers.js';
import { partitionFor } from '../../../platform/stream/embedded/partitioner.js';
import type { ConsumedRecord, Stream, StreamRecord } from '../../../platform/stream/types.js';
import { riskEntitySchema, riskKey, riskStateSchema, type RiskChange, type RiskState } from '../../../schemas/risk.js';
import type { Alert } from '../alert.js';

export function riskCheckpointKey(group: string, alertsTopic: string, partition: number): string {
  return `${group}/${alertsTopic}/${partition}`;
}

export function checkpointRecord(group: string, alertsTopic: string, partition: number, next: number): StreamRecord {
  return {
    key: riskCheckpointKey(group, alertsTopic, partition),
    value: Buffer.from(JSON.stringify({ nextOffset: next })),
    headers: {},
  };
}

/** An alert's risk, checked: what the fold relies on, or why it cannot. */
export function readAlert(value: Buffer): Alert | string | null {
  // Most alerts carry no risk: skip parsing them.
  if (!value.includes('"risk":')) return null;
  let a: Alert;
  try {
    a = JSON.parse(value.toString('utf8')) as Alert;
  } catch {
    return 'not JSON';
  }
  const r = a?.risk;
  if (!r) return null;
  if (typeof a.alert_id !== 'string' || typeof a.rule_id !== 'string' || typeof a.org !== 'string' || !a.org)
    return 'no alert_id, rule_id or org';
  if (!Number.isFinite(Date.parse(a.event_time)) || !Number.isFinite(Date.parse(r.expires_at)))
    return 'event_time or risk.expires_at is not a time';
  if (!['low', 'medium', 'high'].includes(r.level) || typeof r.reason !== 'string') return 'risk.level or reason';
  if (!riskEntitySchema.safeParse(r.entity).success) return 'risk.entity';
  return a;
}

/** An entity's state, or its tombstone (an empty value) when `state` is null. */
export function stateRecord(key: string, state: RiskState | null, org: string): StreamRecord {
  return {
    key,
    value: state ? Buffer.from(JSON.stringify(state)) : Buffer.alloc(0),
    headers: { [Header.org]: org },
  };
}

/** A change, keyed by org (one org's changes in order in one partition), its id in a header for readers. */
export function changeRecord(c: RiskChange): StreamRecord {
  return {
    key: c.org,
    value: Buffer.from(JSON.stringify(c)),
    headers: { [Header.org]: c.org, 'hooklog-change-id': c.change_id, 'hooklog-rule-id': c.rule_id },
  };
}

/** A state record's value, or null for a tombstone or a value that is not a state (`bad` is told why). */
export function decodeState(rec: ConsumedRecord, bad?: (why: string) => void): RiskState | null {
  if (rec.value.length === 0) return null;
  let parsed;
  try {
    parsed = riskStateSchema.safeParse(JSON.parse(rec.value.toString('utf8')));
  } catch {
    bad?.('not JSON');
    return null;
  }
  if (!parsed.success) {
    bad?.(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
    return null;
  }
  if (riskKey(parsed.data.org, parsed.data.entity) !== rec.key) {
    bad?.('its key is not the state’s org and entity');
    return null;
  }
  return parsed.data;
}

export interface PartitionStart {
  readonly nextOffset: number;
  readonly states: Map<string, RiskState>;
}

/**
 * What a new owner of alerts partition `partition` starts from: its checkpoint and the states of the orgs whose
 * alerts land there (an org's alerts are keyed by org: `partitionFor(org, partitions)`, Kafka's partitioner).
 * Read after claiming, so it is final.
 */
export async function readPartitionStart(
  stream: Stream,
  o: { stateTopic: string; riskTopic: string; group: string; alertsTopic: string; partitions: number },
  partition: number,
  bad: (key: string, why: string) => void,
): Promise<PartitionStart> {
  const [checkpoints, latest] = await Promise.all([
    stream.readLatestByKey(o.stateTopic),
    stream.readLatestByKey(o.riskTopic),
  ]);
  const cp = checkpoints.get(riskCheckpointKey(o.group, o.alertsTopic, partition));
  const nextOffset = cp ? Number((JSON.parse(cp.value.toString('utf8')) as { nextOffset: unknown }).nextOffset) : 0;
  const states = new Map<string, RiskState>();
  for (const [key, rec] of latest) {
    const s = decodeState(rec, (why) => bad(key, why));
    if (s && partitionFor(s.org, o.partitions) === partition) states.set(key, s);
  }
  return { nextOffset: Number.isSafeInteger(nextOffset) && nextOffset >= 0 ? nextOffset : 0, states };
}
