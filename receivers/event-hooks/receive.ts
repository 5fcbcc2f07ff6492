import type { IncomingMessage } from 'node:http';
import { Header, deadLetter, type Topics } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import { declaredLength, isTooLarge, readBody } from '../body.js';
import { isJsonRequest, requestHeader, type Reply } from '../fast-path.js';
import type { EventHookConfig, EventHookReceiverConfig } from './config.js';
import { RecentDeliveries, deliveryKey } from './dedupe.js';
import { ORIGIN, REQUEST_ID_HEADER, parseDelivery } from './delivery.js';
import { InFlightLimit, type Permit } from './in-flight.js';
import type { EventHookTelemetry, RejectReason, RequestFacts } from './telemetry.js';

/** Dead letters of refused bodies carry the body's size; a body over the limit is recorded by size alone. */
const BODY_BYTES_HEADER = 'hooklog-body-bytes';

export interface ReceiverDeps {
  readonly stream: Stream;
  readonly topics: Topics;
  readonly bodyLimitBytes: number;
  /** The budget from a delivery's arrival to its answer; safely under the service's 3 s. */
  readonly ackTimeoutMs: number;
  readonly limits: EventHookReceiverConfig;
  readonly telemetry: EventHookTelemetry;
}

/** A configured hook with its pinned source, resolved once at start. */
export interface ResolvedHook {
  readonly config: EventHookConfig;
  readonly expectedSource: string | undefined;
}

/** 'ok', 'timeout', or the error the work failed with. */
type Settled = 'ok' | 'timeout' | Error;

/**
 * The POST side of an event hook, after authentication. Invariants:
 *
 * - 204 only once every record of the delivery (events and per-event dead
 *   letters) is durable in the stream, within the budget (checked again before
 *   answering, not only by a timer); otherwise 503 so the
 *   service retries once. A 503'd append may still land later: the retry's
 *   copy is folded by (org, uuid) in ClickHouse.
 * - A 4xx only once the refused bytes are durable in the deadletter topic (by
 *   size alone past the body limit); if they cannot be, 503, so a refusal
 *   never loses the payload.
 * - In-flight work is bounded; a delivery keeps its permit until its append
 *   settles, even after its 503, so a stalled stream fills the slots and
 *   further deliveries are refused at once instead of piling up appends.
 */
export class DeliveryReceiver {
  readonly #d: ReceiverDeps;
  readonly #inFlight: InFlightLimit;
  readonly #recent: RecentDeliveries;
  /** The 503s, with Retry-After: the same for every delivery. */
  readonly #saturated: Reply;
  readonly #notDurable: Reply;

  constructor(deps: ReceiverDeps) {
    this.#d = deps;
    this.#inFlight = new InFlightLimit({
      maxDeliveries: deps.limits.max_in_flight_deliveries,
      maxBytes: deps.limits.max_in_flight_bytes,
      onChange: (n, bytes) => deps.telemetry.inFlightChanged(n, bytes),
    });
    this.#recent = new RecentDeliveries({ capacity: deps.limits.dedupe_capacity, ttlMs: deps.limits.dedupe_ttl_ms });
    const retryAfter = ['Retry-After', String(deps.limits.retry_after_seconds)];
    this.#saturated = Object.freeze({
      status: 503,
      headers: retryAfter,
      body: JSON.stringify({ error: 'too many deliveries in flight, retry later' }),
    });
    this.#notDurable = Object.freeze({
      status: 503,
      headers: retryAfter,
      body: JSON.stringify({ error: 'not durable in time, retry' }),
    });
  }

  async handle(req: IncomingMessage, hook: ResolvedHook, facts: RequestFacts): Promise<Reply> {
    const started = performance.now();
    const declared = declaredLength(req);
    const permit = this.#inFlight.tryAcquire(Math.min(declared ?? this.#d.bodyLimitBytes, this.#d.bodyLimitBytes));
    if (!permit) return this.#unavailable(facts, 'saturated');
    try {
      let body: Buffer;
      try {
        body = await readBody(req, this.#d.bodyLimitBytes);
      } catch (err) {
        if (!isTooLarge(err)) {
          // The client went away or broke the framing: there is nobody to answer and no whole payload to keep.
          this.#d.telemetry.rejected(facts, 'body-unreadable', 400);
          return UNREADABLE;
        }
        const size = String(err.declaredBytes ?? err.receivedBytes);
        const reply = await this.#refuse(
          hook,
          facts,
          permit,
          this.#remaining(started),
          'too-large',
          413,
          EMPTY,
          err.message,
          {
            [BODY_BYTES_HEADER]: size,
          },
        );
        // The rest of the body is drained unread; the connection ends with this answer, whichever it is.
        return { ...reply, headers: [...(reply.headers ?? []), 'Connection', 'close'] };
      }
      permit.shrink(body.length);
      if (!isJsonRequest(req)) {
        const type = requestHeader(req, 'content-type');
        const reason = `content-type ${type ? JSON.stringify(type.slice(0, 100)) : '(none)'} is not application/json`;
        return await this.#refuse(hook, facts, permit, this.#remaining(started), 'content-type', 415, body, reason);
      }
      const parsed = parseDelivery(body, {
        org: hook.config.org,
        hookId: hook.config.id,
        receivedAt: new Date(),
        expectedSource: hook.expectedSource,
        requestId: facts.requestId,
      });
      if (!parsed.ok)
        return await this.#refuse(
          hook,
          facts,
          permit,
          this.#remaining(started),
          parsed.rejection,
          400,
          body,
          parsed.reason,
        );
      const key = parsed.deliveryId === undefined ? undefined : deliveryKey(hook.config.id, parsed.deliveryId);
      const seen = key === undefined ? undefined : this.#recent.lookup(key);
      // A retry of a delivery still being appended joins that append; only a failed one is appended again.
      const prior =
        seen?.state === 'pending'
          ? await within(
              seen.settled.then((ok) => ok || Promise.reject(new Error('the earlier append failed'))),
              this.#remaining(started),
            )
          : undefined;
      if (seen?.state === 'done' || prior === 'ok') {
        // A retry that waited on the earlier append is bound by its own budget too (see below).
        if (this.#remaining(started) < 0)
          return this.#unavailable(facts, 'not-durable', 'an earlier copy became durable after the budget');
        this.#d.telemetry.duplicate(
          facts,
          parsed.deliveryId!,
          parsed.events.length + parsed.rejected.length,
          (performance.now() - started) / 1000,
        );
        return NO_CONTENT;
      }
      if (prior === 'timeout')
        return this.#unavailable(facts, 'not-durable', 'an earlier copy of this delivery is still being appended');

      const rejected = parsed.rejected;
      const work = Promise.all([
        this.#d.stream.append(this.#d.topics.logs, parsed.events),
        rejected.length > 0 ? this.#d.stream.append(this.#d.topics.deadletter, rejected) : undefined,
      ]);
      if (key !== undefined) this.#recent.track(key, work);
      work.then(
        () => this.#d.telemetry.appended(facts, parsed.deliveryId, parsed.events.length, rejected.length),
        () => undefined,
      );
      permit.holdUntil(work);
      const outcome = await within(work, this.#remaining(started));
      if (outcome !== 'ok')
        return this.#unavailable(facts, 'not-durable', outcome === 'timeout' ? 'timeout' : outcome.message);
      // The budget's timer can lose to the append when the loop was held past it (both become due in one
      // turn): the service may have given up by now, so a late 204 would be a lie. The events are durable;
      // its retry is folded by (org, uuid).
      if (this.#remaining(started) < 0) return this.#unavailable(facts, 'not-durable', 'durable after the budget');
      this.#d.telemetry.acknowledged(
        facts,
        parsed.deliveryId,
        parsed.events.length,
        (performance.now() - started) / 1000,
      );
      return NO_CONTENT;
    } finally {
      permit.release();
    }
  }

  /** What is left of the budget of a delivery that arrived at `started`. */
  #remaining(started: number): number {
    return this.#d.ackTimeoutMs - (performance.now() - started);
  }

  /**
   * Dead-letters a refused body (with why and its size), then answers
   * `status`; 503 instead when the dead letter is not durable in time. The
   * permit is held until the dead letter's append settles.
   */
  async #refuse(
    hook: ResolvedHook,
    facts: RequestFacts,
    permit: Permit,
    budgetMs: number,
    reason: RejectReason,
    status: number,
    raw: Buffer,
    detail: string,
    extra: Record<string, string> = {},
  ): Promise<Reply> {
    const headers = {
      [Header.source]: 'hook',
      [Header.hookId]: hook.config.id,
      [Header.org]: hook.config.org,
      [Header.receivedAt]: new Date().toISOString(),
      [REQUEST_ID_HEADER]: facts.requestId,
      [BODY_BYTES_HEADER]: String(raw.length),
      ...extra,
    };
    const work = this.#d.stream.append(this.#d.topics.deadletter, [
      deadLetter(raw, `${reason}: ${detail}`, ORIGIN, headers, hook.config.org),
    ]);
    permit.holdUntil(work);
    const outcome = await within(work, budgetMs);
    if (outcome !== 'ok')
      return this.#unavailable(
        facts,
        'not-durable',
        `dead letter not durable: ${outcome === 'timeout' ? 'timeout' : outcome.message}`,
      );
    this.#d.telemetry.rejected(facts, reason, status);
    return { status, body: JSON.stringify({ error: detail.slice(0, 1000) }) };
  }

  /** `why` is ours (a stream error or a time-out), logged; never payload text. */
  #unavailable(facts: RequestFacts, reason: 'saturated' | 'not-durable', why?: string): Reply {
    this.#d.telemetry.rejected(facts, reason, 503, why ? { why } : {});
    return reason === 'saturated' ? this.#saturated : this.#notDurable;
  }
}

const EMPTY = Buffer.alloc(0);
const NO_CONTENT: Reply = Object.freeze({ status: 204 });
const UNREADABLE: Reply = Object.freeze({ status: 400, body: '{"error":"could not read the body"}' });

/**
 * How `work` settled within `ms`. Never throws; a rejection after the deadline is absorbed. One promise
 * and one timer per call (rather than a race of three promises): it runs for every delivery.
 */
export function within(work: Promise<unknown>, ms: number): Promise<Settled> {
  if (ms <= 0) {
    work.catch(() => undefined);
    return TIMED_OUT;
  }
  return new Promise<Settled>((resolve) => {
    const timer = setTimeout(resolve, ms, 'timeout');
    work.then(
      () => {
        clearTimeout(timer);
        resolve('ok');
      },
      (err: unknown) => {
        clearTimeout(timer);
        resolve(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
const TIMED_OUT: Promise<Settled> = Promise.resolve('timeout');
