/**
 * The audit trail: every decision goes to `<prefix>.token-decisions`, off the
 * answer's latency path. The answer path only pushes a small object onto a
 * bounded queue; ids, timestamps and JSON are made by the flusher. When the
 * queue is full (the stream is slow or down) a decision is dropped and
 * counted rather than delaying a sign-in: the audit trail is best effort by
 * design, unlike event deliveries, which are acknowledged only once durable.
 * One append is in flight at a time; a failed one is retried briefly, then
 * its records are dropped and counted.
 */
import { randomUUID } from 'node:crypto';
import { isRetriable } from '../../platform/errors.js';
import { RetryPolicies, retry, type RetryPolicy } from '../../platform/retry.js';
import { Header } from '../../platform/stream/headers.js';
import type { Stream, StreamRecord } from '../../platform/stream/types.js';
import type { Outcome, TokenHookTelemetry } from './telemetry.js';

/** What the answer path records about one decision (no serialisation there). */
export interface DecisionRecord {
  readonly decidedAt: number;
  readonly hookId: string;
  readonly org: string;
  readonly eventId: string | undefined;
  readonly requestId: string | undefined;
  readonly userId: string | undefined;
  readonly clientId: string | undefined;
  readonly grantType: string | undefined;
  readonly outcome: Outcome;
  readonly rulesMatched: readonly string[];
  /** The answer's commands, as the JSON text the answer carried. */
  readonly commandsJson: string | undefined;
  readonly errorSummary: string | undefined;
  readonly errorKind: 'internal' | 'unsafe_answer' | undefined;
  readonly latencyUs: number;
}

/** Source header value of audit records. */
export const AUDIT_SOURCE = 'token-hook';

/** Request-supplied strings are capped: an audit row is not a place for a megabyte of login. */
const MAX_FIELD_CHARS = 256;
const cap = (s: string | undefined) =>
  s === undefined ? '' : s.length > MAX_FIELD_CHARS ? s.slice(0, MAX_FIELD_CHARS) : s;

/**
 * The stream record of a decision: its JSON (snake_case, the public shape), keyed by org, hooklog's headers beside
 * it.
 */
export function decisionRecord(r: DecisionRecord, decisionId: string = randomUUID()): StreamRecord {
  const decidedAt = new Date(r.decidedAt).toISOString();
  const value = {
    decision_id: decisionId,
    decided_at: decidedAt,
    hook_id: r.hookId,
    org: r.org,
    event_id: cap(r.eventId),
    request_id: cap(r.requestId),
    user_id: cap(r.userId),
    client_id: cap(r.clientId),
    grant_type: cap(r.grantType),
    outcome: r.outcome,
    rules_matched: r.rulesMatched,
    error_summary: r.errorSummary ?? '',
    error_kind: r.errorKind ?? '',
    latency_us: r.latencyUs,
  };
  // `commands` last, spliced in as the text the answer already carried: no second stringify.
  const json = JSON.stringify(value);
  const text = `${json.slice(0, -1)},"commands":${r.commandsJson ?? '[]'}}`;
  const headers: Record<string, string> = {
    [Header.org]: r.org,
    [Header.source]: AUDIT_SOURCE,
    [Header.hookId]: r.hookId,
    [Header.receivedAt]: decidedAt,
  };
  if (r.eventId) headers[Header.deliveryId] = cap(r.eventId);
  return { key: r.org, value: Buffer.from(text), headers, timestamp: r.decidedAt };
}

export interface AuditQueueOptions {
  readonly stream: Stream;
  readonly topic: string;
  readonly capacity: number;
  readonly batchRecords: number;
  readonly flushIntervalMs: number;
  readonly telemetry: TokenHookTelemetry;
  /** Retries of one failed append before its records are dropped. Default RetryPolicies.request. */
  readonly retryPolicy?: RetryPolicy;
}

export class AuditQueue {
  readonly #opts: AuditQueueOptions;
  #items: DecisionRecord[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | null = null;
  #closed = false;

  constructor(opts: AuditQueueOptions) {
    this.#opts = opts;
  }

  /** Number of decisions waiting. */
  get length(): number {
    return this.#items.length;
  }

  /** Queues a decision, or drops and counts it when the queue is full. Never blocks, never throws. */
  offer(record: DecisionRecord): void {
    if (this.#closed || this.#items.length >= this.#opts.capacity) {
      this.#opts.telemetry.auditDropped('queue_full', 1);
      return;
    }
    this.#items.push(record);
    this.#schedule();
  }

  /** Stops taking decisions and appends those still queued. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#flushing;
    await this.#drain();
  }

  #schedule(): void {
    if (this.#timer || this.#flushing) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flushing = this.#drain().finally(() => {
        this.#flushing = null;
        if (this.#items.length > 0 && !this.#closed) this.#schedule();
      });
    }, this.#opts.flushIntervalMs);
  }

  async #drain(): Promise<void> {
    const { stream, topic, batchRecords, telemetry } = this.#opts;
    while (this.#items.length > 0) {
      let batch: DecisionRecord[];
      if (this.#items.length <= batchRecords) {
        batch = this.#items;
        this.#items = [];
      } else {
        batch = this.#items.splice(0, batchRecords);
      }
      const records = batch.map((r) => decisionRecord(r));
      const started = performance.now();
      try {
        await retry(() => stream.append(topic, records), {
          policy: this.#opts.retryPolicy ?? RetryPolicies.request,
          retriable: isRetriable,
        });
        telemetry.auditAppended(records.length, performance.now() - started);
      } catch (err) {
        telemetry.auditDropped('append_failed', records.length, err);
      }
    }
  }
}
