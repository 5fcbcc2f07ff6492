/**
 * The audit trail: every decision goes to `<prefix>.token-decisions`, off the
 * answer's latency path, and none is lost to an outage of the stream.
 *
 * The answer path encodes its decision as it is offered (its record's bytes,
 * written from per-hook parts made once: a few µs, the same for every
 * decision) onto a bounded in-memory queue; the flusher appends batches, one
 * append in flight, each at most batch_records and APPEND_BYTES, so no turn of
 * the event loop does more than one batch's audit work (an append, a spill or
 * a spool write). What the stream does not take goes to a disk spool
 * (audit-spool.ts) instead of being dropped:
 *
 * - an append that failed after its brief retries: the batch is spooled, and
 *   while the spool has a backlog every later batch is spooled behind it, so
 *   a down stream is not hammered by the flusher;
 * - a queue past half full (the append in flight is slow): batches are moved
 *   from the queue to the spool a turn at a time, so memory stays bounded
 *   whatever the stream does; and if the queue still fills up, the one
 *   decision that does not fit is spooled on its own (a page-cache write).
 *
 * A replay loop appends the spool back to the stream, in order, with capped
 * backoff while the stream is down, and truncates it once drained. The spool's
 * byte cap (or a disk refusing writes) is the only place a decision is dropped:
 * counted (`hooklog_token_hook_audit_dropped_total`), logged, never silent.
 */
import { randomUUID } from 'node:crypto';
import { isRetriable } from '../../platform/errors.js';
import { RetryPolicies, backoffDelay, retry, type RetryPolicy } from '../../platform/retry.js';
import { RECORD_FORMATS } from '../../platform/stream/formats.js';
import { Header } from '../../platform/stream/headers.js';
import type { Stream, StreamRecord } from '../../platform/stream/types.js';
import { AuditSpool } from './audit-spool.js';
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

/**
 * The most decision bytes one append carries (one record over it goes alone): what bounds the audit's work in any
 * one turn of the event loop (the stream encodes, checksums and copies an append in one synchronous run; a spill
 * writes one to the spool). batch_records bounds the count; an answer can be 256 KB, so without a byte budget 100 of
 * them would be one 25 MB turn.
 */
export const APPEND_BYTES = 128 * 1024;

/** Request-supplied strings are capped: an audit row is not a place for a megabyte of login. */
const MAX_FIELD_CHARS = 256;
const cap = (s: string | undefined) =>
  s === undefined ? '' : s.length > MAX_FIELD_CHARS ? s.slice(0, MAX_FIELD_CHARS) : s;
/** A JSON string literal. */
const q = (s: string) => JSON.stringify(s);

/**
 * What every record of one hook carries, made once: the JSON text of its hook and org, and its stream headers,
 * one frozen object shared by all its records, the topic's format version among them (so the stream's format
 * wrapper, platform/stream/formats.ts, passes the records on as they are instead of copying each to stamp it).
 * A shared headers object is also what lets the embedded log encode the headers once per append instead of once
 * per record (frame.ts caches by the object). Nothing per record goes in the headers: the decision's time is the
 * record's timestamp (what the sink's received_at falls back to), its event id is in the value. Hooks are
 * configured, so the map stays small; the cap only guards against misuse.
 */
interface HookParts {
  readonly text: string;
  readonly headers: Readonly<Record<string, string>>;
}
const HOOK_PARTS = new Map<string, HookParts>();
const MAX_HOOK_PARTS = 1024;
const FORMAT = String(RECORD_FORMATS['token-decisions'].writes);
/** The last hook's parts: a queue serves one hook, so nearly every decision finds its own here, no key made. */
let last: { hookId: string; org: string; parts: HookParts } | undefined;

function hookParts(hookId: string, org: string): HookParts {
  if (last !== undefined && last.hookId === hookId && last.org === org) return last.parts;
  const key = `${hookId}\u0000${org}`;
  let parts = HOOK_PARTS.get(key);
  if (parts === undefined) {
    parts = {
      text: `,"hook_id":${q(hookId)},"org":${q(org)}`,
      headers: Object.freeze({
        [Header.org]: org,
        [Header.source]: AUDIT_SOURCE,
        [Header.hookId]: hookId,
        [Header.format]: FORMAT,
      }),
    };
    if (HOOK_PARTS.size >= MAX_HOOK_PARTS) HOOK_PARTS.clear();
    HOOK_PARTS.set(key, parts);
  }
  last = { hookId, org, parts };
  return parts;
}

/** `new Date(ms).toISOString()`, with the text up to the second reused while the second lasts. */
let isoSecond = Number.NaN;
let isoPrefix = '';
function isoTime(ms: number): string {
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4); // "…T10:00:00." without "000Z"
  }
  const milli = ms - second * 1000;
  return `${isoPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

/**
 * The stream record of a decision: its JSON (snake_case, the public shape), keyed by org, the hook's shared
 * headers beside it, the decision's time as its timestamp. The text is what `JSON.stringify` gives for the object
 * of these fields in this order, `commands` last (spliced in as the text the answer already carried), written out
 * directly: no object built and walked. What needs no escaping is not escaped: a generated UUID, the outcome and
 * the error kind (closed lists of plain words).
 */
export function decisionRecord(r: DecisionRecord, decisionId?: string): StreamRecord {
  const hook = hookParts(r.hookId, r.org);
  const text =
    `{"decision_id":${decisionId === undefined ? `"${randomUUID()}"` : q(decisionId)}` +
    `,"decided_at":"${isoTime(r.decidedAt)}"${hook.text}` +
    `,"event_id":${q(cap(r.eventId))},"request_id":${q(cap(r.requestId))},"user_id":${q(cap(r.userId))}` +
    `,"client_id":${q(cap(r.clientId))},"grant_type":${q(cap(r.grantType))},"outcome":"${r.outcome}"` +
    `,"rules_matched":${JSON.stringify(r.rulesMatched)},"error_summary":${q(r.errorSummary ?? '')}` +
    `,"error_kind":"${r.errorKind ?? ''}","latency_us":${JSON.stringify(r.latencyUs)}` +
    `,"commands":${r.commandsJson ?? '[]'}}`;
  return { key: r.org, value: Buffer.from(text), headers: hook.headers, timestamp: r.decidedAt };
}

export interface AuditQueueOptions {
  readonly stream: Stream;
  readonly topic: string;
  readonly capacity: number;
  readonly batchRecords: number;
  readonly flushIntervalMs: number;
  readonly telemetry: TokenHookTelemetry;
  /** The hook's spool file. */
  readonly spoolFile: string;
  /** The spool file's cap; past it (and only there) decisions are dropped and counted. */
  readonly spoolMaxBytes: number;
  /** Retries of one append before its batch goes to the spool. Default RetryPolicies.request. */
  readonly retryPolicy?: RetryPolicy;
  /** Backoff of the replay loop while the stream is down. Default REPLAY_POLICY. */
  readonly replayPolicy?: RetryPolicy;
}

/** Replays never give up; they retry a down stream every few seconds at most. */
export const REPLAY_POLICY: RetryPolicy = {
  initialMs: 200,
  multiplier: 2,
  maxMs: 5_000,
  retries: Infinity,
  jitter: 0.2,
};

export class AuditQueue {
  readonly #opts: AuditQueueOptions;
  readonly #spool: AuditSpool;
  /**
   * Decisions waiting, already encoded: each is encoded as it is offered, so the flush only appends. Encoding a
   * flush's worth at once (50 decisions every 50 ms at 1,000 sign-ins a second) held the loop ~1.5 ms, long
   * enough to show in the sign-in's p99; one at a time it is a few µs each.
   */
  #items: StreamRecord[] = [];
  /** The value bytes in `#items`. */
  #itemsBytes = 0;
  /** When the oldest decision in `#items` was queued (performance.now()), or earlier: its flush is due from it. */
  #firstAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | null = null;
  #spilling = false;
  #replaying: Promise<void> | null = null;
  /** Wakes the replay loop from its backoff (on close). */
  #wake: (() => void) | undefined;
  #closed = false;

  constructor(opts: AuditQueueOptions) {
    this.#opts = opts;
    this.#spool = new AuditSpool({
      file: opts.spoolFile,
      maxBytes: opts.spoolMaxBytes,
      onSyncError: (err) => opts.telemetry.auditSpoolError(err),
    });
  }

  /** Replays what an earlier run left in the spool. */
  start(): void {
    const { tornBytes } = this.#spool.open();
    if (tornBytes > 0) this.#opts.telemetry.auditDropped('spool_torn', 1);
    this.#replay();
  }

  /** Number of decisions waiting in memory. */
  get length(): number {
    return this.#items.length;
  }

  /** Bytes in the spool not yet replayed into the stream. */
  get spooledBytes(): number {
    return this.#spool.backlogBytes;
  }

  /** Queues a decision. Never blocks on the stream, never throws. */
  offer(record: DecisionRecord): void {
    if (this.#closed || this.#items.length >= this.#opts.capacity) {
      // The spill could not keep up (or the queue is closed): this one decision goes to disk on its own.
      this.#toSpool([decisionRecord(record)]);
      return;
    }
    if (this.#items.length === 0) this.#firstAt = performance.now();
    const encoded = decisionRecord(record);
    this.#items.push(encoded);
    this.#itemsBytes += encoded.value.length;
    if (this.#items.length * 2 >= this.#opts.capacity) this.#spillSoon();
    this.#schedule();
  }

  /** Stops taking decisions into memory, appends or spools those queued, and tries the spool once more. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#flushing;
    await this.#drain(true);
    this.#wake?.();
    await this.#replaying;
    await this.#replayOnce();
    await this.#spool.close();
  }

  /** Flushes when the oldest queued decision has waited flush_interval_ms. */
  #schedule(): void {
    if (this.#timer || this.#flushing) return;
    const wait = Math.max(0, this.#firstAt + this.#opts.flushIntervalMs - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flushing = this.#drain(false).finally(() => {
        this.#flushing = null;
        if (this.#items.length > 0 && !this.#closed) this.#schedule();
      });
    }, wait);
  }

  /** The next append's worth from the front of the queue: at most batch_records and APPEND_BYTES (or one record). */
  #take(): StreamRecord[] {
    const items = this.#items;
    const max = Math.min(items.length, this.#opts.batchRecords);
    let n = 0;
    let bytes = 0;
    while (n < max && (n === 0 || bytes + items[n]!.value.length <= APPEND_BYTES)) bytes += items[n++]!.value.length;
    this.#itemsBytes -= bytes;
    if (n === items.length) {
      this.#items = [];
      return items;
    }
    return items.splice(0, n);
  }

  /** Whether the queue holds a whole append's worth (by count or by bytes). */
  #fullBatch(): boolean {
    return this.#items.length >= this.#opts.batchRecords || this.#itemsBytes >= APPEND_BYTES;
  }

  /**
   * Appends the queue: all of it (`all`, on close), else what it held when the flush began and any full batch
   * behind that. Decisions queued while an append was in flight wait for their own flush interval instead of going
   * at once as a batch of one or two: every append costs a write, an fsync and their round trips, whatever its size.
   * One append at a time, each `#take`'s worth: a turn of the event loop appends at most APPEND_BYTES.
   */
  async #drain(all: boolean): Promise<void> {
    const { stream, topic, telemetry } = this.#opts;
    let due = this.#items.length;
    while (this.#items.length > 0 && (all || due > 0 || this.#fullBatch())) {
      const records = this.#take();
      due -= Math.min(due, records.length);
      if (this.#spool.backlogBytes > 0) {
        this.#toSpool(records); // behind the backlog, which the replay loop appends in order
        // A turn of the event loop between batches, as between appends: a queue spooled whole in one run held the
        // loop for all of it.
        await new Promise<void>((resolve) => setImmediate(resolve));
        continue;
      }
      const started = performance.now();
      try {
        await retry(() => stream.append(topic, records), {
          policy: this.#opts.retryPolicy ?? RetryPolicies.request,
          retriable: isRetriable,
        });
        telemetry.auditAppended(records.length, performance.now() - started);
      } catch (err) {
        telemetry.auditAppendFailed(records.length, err);
        this.#toSpool(records);
      }
    }
  }

  /** Moves queued batches to the spool, one batch per turn of the event loop, while the queue is half full. */
  #spillSoon(): void {
    if (this.#spilling) return;
    this.#spilling = true;
    const step = (): void => {
      if (this.#items.length * 2 < this.#opts.capacity) {
        this.#spilling = false;
        return;
      }
      this.#toSpool(this.#take());
      setImmediate(step);
    };
    setImmediate(step);
  }

  #toSpool(records: StreamRecord[]): void {
    const { refused, reason } = this.#spool.write(records);
    if (reason) this.#opts.telemetry.auditDropped(reason, refused);
    if (refused < records.length) {
      this.#opts.telemetry.auditSpooled(records.length - refused, this.#spool.backlogBytes);
      this.#replay();
    }
  }

  /** Starts the replay loop unless it runs: append the spool back, backing off while the stream refuses. */
  #replay(): void {
    if (this.#replaying || this.#closed || this.#spool.backlogBytes === 0) return;
    const policy = this.#opts.replayPolicy ?? REPLAY_POLICY;
    this.#replaying = (async () => {
      let failures = 0;
      while (!this.#closed && this.#spool.backlogBytes > 0) {
        // Wait first: a batch was just spooled because the stream failed, or the flusher is mid-append.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, backoffDelay(policy, Math.max(1, failures)));
          this.#wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.#wake = undefined;
        if (this.#closed) break;
        failures = (await this.#replayOnce()) ? 0 : failures + 1;
      }
    })().finally(() => {
      this.#replaying = null;
    });
  }

  /** Appends the spool's backlog, batch by batch; false when the stream refused one (it stays spooled). */
  async #replayOnce(): Promise<boolean> {
    const { stream, topic, batchRecords, telemetry } = this.#opts;
    while (this.#spool.backlogBytes > 0) {
      const batch = this.#spool.read(batchRecords, APPEND_BYTES);
      if (batch.corrupt > 0) telemetry.auditDropped('spool_torn', batch.corrupt);
      try {
        if (batch.records.length > 0) await stream.append(topic, batch.records);
      } catch (err) {
        telemetry.auditAppendFailed(batch.records.length, err);
        return false;
      }
      this.#spool.consume(batch.bytes);
      telemetry.auditReplayed(batch.records.length, this.#spool.backlogBytes);
    }
    return true;
  }
}
