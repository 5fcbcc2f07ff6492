/**
 * The rule engine as a stream consumer: its own group on `<prefix>.logs`,
 * one PartitionEngine per partition (records are keyed by org, so an org's
 * events and its window state live in one partition). Each batch's alerts
 * and the engine checkpoint are appended atomically (see checkpoint.ts);
 * only then does the handler resolve and the stream commit the offsets.
 */
import { attachEnrichment, readEnrichment } from '../../platform/enrichment/enrichment.js';
import { Header } from '../../platform/stream/headers.js';
import type {
  Consumer,
  ConsumedRecord,
  RecordBatch,
  Stream,
  StreamRecord,
  Transactor,
} from '../../platform/stream/types.js';
import type { Alert } from './alert.js';
import { checkpointKey, readCheckpoints, type Checkpoint } from './checkpoint.js';
import { PartitionEngine, emptyState, type EngineState, type EventMeta } from './engine.js';
import type { CompiledRule } from './rules/types.js';
import type { AlertingTelemetry } from './telemetry.js';
import { addActorContext, NO_IDENTITY, type ActorContextLookup } from './identity/context.js';

export interface EngineConsumerOptions {
  readonly stream: Stream;
  readonly logsTopic: string;
  readonly alertsTopic: string;
  readonly stateTopic: string;
  readonly group: string;
  readonly rules: readonly CompiledRule[];
  readonly allowedLatenessMs: number;
  readonly dedupWindowMs: number;
  readonly maxBatchRecords: number;
  readonly maxBatchWaitMs: number;
  readonly telemetry: AlertingTelemetry;
  /**
   * The actors' identity context (identity/view.ts), given to each event before the rules run; current before
   * the consumer starts. Without it every actor has empty lists (no user is known to hold a role).
   */
  readonly identity?: ActorContextLookup;
}

/** Event time: `published` (ISO-8601, tolerating a space for T and a missing zone), else the record time. */
export function eventTimeMs(event: Record<string, unknown>, fallback: number): number {
  const p = event['published'];
  if (typeof p === 'string') {
    // The usual form (a digit first, `Z` last, no space) is one the normalising below leaves unchanged:
    // it goes to Date.parse as is, without the trim, replace and zone test per event.
    const first = p.charCodeAt(0);
    const usual = p.charCodeAt(p.length - 1) === 90 && first >= 48 && first <= 57 && !p.includes(' ');
    const t = Date.parse(usual ? p : withZone(p.trim().replace(' ', 'T')));
    if (Number.isFinite(t)) return t;
  }
  return fallback;
}

/** `s` with a `Z` added unless it ends with a zone. */
function withZone(s: string): string {
  return /(Z|[+-]\d\d:?\d\d)$/.test(s) ? s : `${s}Z`;
}

/**
 * Alert → stream record: keyed by org so one org's alerts keep their order in
 * one partition. No record timestamp: the stream stamps the append time. An
 * event-time timestamp (possibly days old, after a backfill) would make Kafka
 * roll and delete the alerts at once under time-based retention.
 */
export function alertRecord(a: Alert): StreamRecord {
  return {
    key: a.org,
    value: Buffer.from(JSON.stringify(a)),
    headers: { [Header.org]: a.org, 'hooklog-alert-id': a.alert_id, 'hooklog-rule-id': a.rule_id },
  };
}

/** A record's value as the engine takes it: a JSON object, else null (counted as invalid). */
export function parseEventValue(value: Buffer): Record<string, unknown> | null {
  let event: unknown;
  try {
    event = JSON.parse(value.toString('utf8'));
  } catch {
    return null;
  }
  return event && typeof event === 'object' && !Array.isArray(event) ? (event as Record<string, unknown>) : null;
}

/**
 * What the engine is told of an event beside its fields; shared with the offline
 * test cases (cases/run.ts), so both derive the same time and id from the same bytes.
 */
export function eventMeta(
  event: Record<string, unknown>,
  org: string,
  fallbackMs: number,
  position: string,
): EventMeta {
  const uuid = event['uuid'];
  // Stand-in id for events without a uuid: their stream position, stable across redeliveries.
  return { org, timeMs: eventTimeMs(event, fallbackMs), id: typeof uuid === 'string' && uuid ? uuid : position };
}

function metaOf(rec: ConsumedRecord, event: Record<string, unknown>): EventMeta {
  return eventMeta(
    event,
    rec.headers[Header.org] ?? rec.key ?? '',
    rec.timestamp,
    `${rec.topic}/${rec.partition}/${rec.offset}`,
  );
}

interface Slot {
  engine: PartitionEngine;
  nextOffset: number;
  /** Late events per rule and org as of the last durable checkpoint: what is new after a batch is reported. */
  lateReported: Map<string, number>;
}

/** The late counts of an engine state, by rule and org. */
function lateCounts(state: Readonly<EngineState>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [rule, byOrg] of Object.entries(state.lateRules ?? {}))
    for (const [org, c] of Object.entries(byOrg)) out.set(JSON.stringify([rule, org]), c[0]);
  return out;
}

export async function startEngineConsumer(o: EngineConsumerOptions): Promise<Consumer> {
  // Read (after claiming) when a partition first reaches us: another instance may evaluate it before then.
  let checkpoints = new Map<number, Checkpoint>();
  const slots = new Map<number, Slot>();
  const reload = new Set<number>();
  const slotFrom = (cp: Checkpoint): Slot => {
    // A deep copy: the engine mutates its state, the checkpoint map must stay as read.
    const state = JSON.parse(JSON.stringify(cp.state)) as EngineState;
    return {
      engine: new PartitionEngine(
        o.rules,
        { allowedLatenessMs: o.allowedLatenessMs, dedupWindowMs: o.dedupWindowMs },
        state,
      ),
      nextOffset: cp.nextOffset,
      lateReported: lateCounts(state),
    };
  };
  const kinds = new Map(o.rules.map((r) => [r.id, r.kind]));
  const identity = o.identity ?? NO_IDENTITY;
  /** Late events the batch just made durable: counted and logged (the logger summarises repeats). */
  const reportLate = (slot: Slot, partition: number) => {
    const state = slot.engine.state;
    for (const [rule, byOrg] of Object.entries(state.lateRules ?? {})) {
      for (const [org, [n, lastMs, watermarkMs]] of Object.entries(byOrg)) {
        const k = JSON.stringify([rule, org]);
        const fresh = n - (slot.lateReported.get(k) ?? 0);
        if (fresh <= 0) continue;
        slot.lateReported.set(k, n);
        o.telemetry.late({
          rule,
          kind: kinds.get(rule) ?? 'unknown',
          org,
          partition,
          events: fresh,
          lastEventMs: lastMs,
          watermarkMs,
          allowedLatenessMs: o.allowedLatenessMs,
        });
      }
    }
  };

  // One claim per logs partition (transactional id `<clientId>.<state topic>.<group>.<partition>`): the
  // instance that evaluates a partition now fences whoever evaluated it before, so a zombie that lost
  // it can no longer write alerts or checkpoints, and what we read after claiming is final.
  const claims = new Map<number, Transactor>();
  const handler = async (batch: RecordBatch) => {
    let slot = slots.get(batch.partition);
    let claim = claims.get(batch.partition);
    if (!claim || !slot || batch.firstOffset > slot.nextOffset || reload.has(batch.partition)) {
      // New to us (another group member may have evaluated it since we read the checkpoints), a gap,
      // or our last write failed and may yet have landed: claim, then the state topic says where we are.
      claims.delete(batch.partition);
      await claim?.close();
      claim = await o.stream.claim(`${o.stateTopic}.${o.group}.${batch.partition}`);
      claims.set(batch.partition, claim);
      checkpoints = await readCheckpoints(o.stream, o.stateTopic, o.group, o.logsTopic);
      reload.delete(batch.partition);
      slot = undefined;
    }
    if (!slot) {
      slot = slotFrom(checkpoints.get(batch.partition) ?? { nextOffset: 0, state: emptyState() });
      slots.set(batch.partition, slot);
    }
    const fresh = batch.records.filter((r) => r.offset >= slot.nextOffset);
    o.telemetry.skipped(batch.records.length - fresh.length);
    if (fresh.length === 0) return;
    const alerts: Alert[] = [];
    for (const rec of fresh) {
      const event = parseEventValue(rec.value);
      if (!event) {
        o.telemetry.invalid(rec.partition, rec.offset);
        continue;
      }
      const meta = metaOf(rec, event);
      // What was looked up when the event was appended (platform/enrichment/), as the sink stores it.
      attachEnrichment(event, readEnrichment(rec.headers));
      // As of now, not as of the event: a redelivered batch reads the context the view holds then.
      addActorContext(event, meta.org, identity);
      alerts.push(...slot.engine.process(event, meta));
    }
    // Grouped alerts that findings joined: one record each for the batch, in the same atomic write.
    alerts.push(...slot.engine.flush());
    const nextOffset = batch.lastOffset + 1;
    const saved = JSON.stringify(slot.engine.state);
    const cp = Buffer.from(`{"nextOffset":${nextOffset},"state":${saved}}`);
    try {
      await claim.appendAtomically([
        ...(alerts.length ? [{ topic: o.alertsTopic, records: alerts.map(alertRecord) }] : []),
        {
          topic: o.stateTopic,
          records: [{ key: checkpointKey(o.group, o.logsTopic, batch.partition), value: cp, headers: {} }],
        },
      ]);
    } catch (err) {
      // The engine ran ahead of what is durable. The write may still have landed (a time-out
      // after the commit), so the retry starts from the checkpoint the state topic holds.
      o.telemetry.checkpointFailed(batch.partition, err);
      slots.delete(batch.partition);
      reload.add(batch.partition);
      throw err;
    }
    slot.nextOffset = nextOffset;
    reportLate(slot, batch.partition);
    o.telemetry.evaluated(batch.partition, fresh.length, alerts.length);
  };

  // The state topic's reader joins its own group before this process joins the engine's: a partition
  // handed over (now or later) then reads its checkpoint without waiting for a group to form
  // (Stream.follow). Joining first would take partitions from the running engines at once while this
  // reader, a new group, waits out the broker's group.initial.rebalance.delay.ms (see ingest/index.ts).
  await o.stream.follow(o.stateTopic);
  const consumer = await o.stream.consume({
    topic: o.logsTopic,
    group: o.group,
    handler,
    maxBatchRecords: o.maxBatchRecords,
    maxBatchWaitMs: o.maxBatchWaitMs,
    onHandlerError: (err, batch, attempt) =>
      o.telemetry.log.warn({ partition: batch.partition, attempt, err }, 'alerting batch failed; retrying'),
  });
  return {
    stop: async () => {
      await consumer.stop();
      await Promise.all([...claims.values()].map((c) => c.close()));
      claims.clear();
    },
  };
}
