/**
 * The receiver's internal events: one function each, which logs through a
 * child logger bound to `component: event-hooks` and counts in the shared
 * Prometheus registry. Labels and log fields are values hooklog chose: a
 * configured hook id (or "unknown"), a reason from the closed list below, an
 * HTTP status. Nothing from a request (path, headers, body, the secret tried)
 * is ever bound, except the request id we generated.
 */
import { counter, gauge, histogram } from '../../platform/metrics.js';
import type { Logger } from '../../platform/log.js';

/** Why a request was refused. A closed list: it is the `reason` label. */
export const RejectReasons = [
  'unauthorized',
  'bad-challenge',
  'content-type',
  'too-large',
  'body-unreadable',
  'invalid-utf8',
  'too-deep',
  'not-json',
  'not-delivery',
  'source-mismatch',
  'invalid-event',
  'saturated',
  'not-durable',
] as const;
export type RejectReason = (typeof RejectReasons)[number];

const deliveries = counter({
  name: 'hooklog_event_hook_deliveries_total',
  help: 'Event hook requests answered, by hook and HTTP status (GET verifications and POST deliveries).',
  labelNames: ['hook', 'method', 'status'],
});
const events = counter({
  name: 'hooklog_event_hook_events_total',
  help: 'Events received in deliveries: appended (durable in the logs topic, in time for a 204 or not), dead_lettered (invalid), or duplicate (in a repeat of a delivery already appended, or joined while it was appending).',
  labelNames: ['hook', 'outcome'],
});
const rejections = counter({
  name: 'hooklog_event_hook_rejections_total',
  help: 'Requests (or, for invalid-event, events) refused, by reason. reason="unauthorized" counts failed authentication attempts.',
  labelNames: ['hook', 'reason'],
});
const secretMatches = counter({
  name: 'hooklog_event_hook_secret_matches_total',
  help: 'Authenticated requests by which configured secret they carried (secret="1" the first, "2" the second): during a rotation, retire the second once it stops growing.',
  labelNames: ['hook', 'secret'],
});
const ackSeconds = histogram({
  name: 'hooklog_event_hook_ack_seconds',
  help: "From a delivery's arrival to its 204: reading, validating, and the stream's durable acknowledgement.",
  labelNames: ['hook'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3],
});
const inFlight = gauge({
  name: 'hooklog_event_hook_in_flight_deliveries',
  help: 'Authenticated deliveries holding a slot: being read, validated or appended (a 503 keeps its slot until its append settles).',
});
const inFlightBytes = gauge({
  name: 'hooklog_event_hook_in_flight_bytes',
  help: 'Request bytes reserved by in-flight deliveries.',
});

export type EventHookTelemetry = ReturnType<typeof createEventHookTelemetry>;

export interface RequestFacts {
  /** A configured hook id, or "unknown". */
  readonly hook: string;
  readonly requestId: string;
  readonly method: string;
}

export function createEventHookTelemetry(logger: Logger) {
  const log = logger.child({ component: 'event-hooks' });
  const answered = (r: RequestFacts, status: number) =>
    deliveries.inc({ hook: r.hook, method: r.method, status: String(status) });
  return {
    /**
     * Logged without the presented value or the header name's value; the client address is the proxy's unless
     * server.trust_proxy.
     */
    authFailed(r: RequestFacts, ip: string): void {
      rejections.inc({ hook: r.hook, reason: 'unauthorized' });
      answered(r, 401);
      log.warn({ hook: r.hook, request_id: r.requestId, method: r.method, ip }, 'event_hook_auth_failed');
    },
    /** `index` of auth.secrets (0-based) the request carried. */
    secretMatched(r: RequestFacts, index: number): void {
      secretMatches.inc({ hook: r.hook, secret: String(index + 1) });
    },
    verified(r: RequestFacts): void {
      answered(r, 200);
      log.info({ hook: r.hook, request_id: r.requestId }, 'event_hook_verified');
    },
    /** `detail` goes to the dead letter and the caller, never to the log: it can quote the payload. */
    rejected(r: RequestFacts, reason: RejectReason, status: number, extra: Record<string, number | string> = {}): void {
      rejections.inc({ hook: r.hook, reason });
      answered(r, status);
      const level = status >= 500 ? 'warn' : 'info';
      log[level]({ hook: r.hook, request_id: r.requestId, reason, status, ...extra }, 'event_hook_rejected');
    },
    /** A delivery's records became durable (counted even when that came too late for a 204). */
    appended(r: RequestFacts, deliveryId: string | undefined, appended: number, deadLettered: number): void {
      events.inc({ hook: r.hook, outcome: 'appended' }, appended);
      if (deadLettered === 0) return;
      events.inc({ hook: r.hook, outcome: 'dead_lettered' }, deadLettered);
      rejections.inc({ hook: r.hook, reason: 'invalid-event' }, deadLettered);
      log.info(
        { hook: r.hook, request_id: r.requestId, delivery_id: deliveryId, dead_lettered: deadLettered },
        'event_hook_events_dead_lettered',
      );
    },
    acknowledged(r: RequestFacts, deliveryId: string | undefined, eventCount: number, seconds: number): void {
      answered(r, 204);
      ackSeconds.observe({ hook: r.hook }, seconds);
      log.debug(
        {
          hook: r.hook,
          request_id: r.requestId,
          delivery_id: deliveryId,
          events: eventCount,
          ms: Math.round(seconds * 1000),
        },
        'event_hook_acknowledged',
      );
    },
    /** A repeat of a delivery already acknowledged (or joined while in flight): nothing appended again. */
    duplicate(r: RequestFacts, deliveryId: string, eventCount: number, seconds: number): void {
      answered(r, 204);
      events.inc({ hook: r.hook, outcome: 'duplicate' }, eventCount);
      ackSeconds.observe({ hook: r.hook }, seconds);
      log.info({ hook: r.hook, request_id: r.requestId, delivery_id: deliveryId }, 'event_hook_duplicate_delivery');
    },
    /** Deliveries and bytes taken (+) or given back (-) in the in-flight limit. */
    inFlightChanged(deliveryDelta: number, byteDelta: number): void {
      if (deliveryDelta !== 0) inFlight.inc(deliveryDelta);
      if (byteDelta !== 0) inFlightBytes.inc(byteDelta);
    },
  };
}
