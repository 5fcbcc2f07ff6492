/**
 * The SSF receiver's internal events: one function each, logging through a
 * child logger bound to `component: ssf-receiver` and counting in the shared
 * registry. Labels and log fields are values hooklog chose (a configured
 * receiver id or "unknown", a result, an RFC 8935 err code); nothing of a SET
 * (its claims, subject, jti) is bound: a jti is the transmitter's string, and a
 * refused SET's claims are untrusted.
 */
import { counter, histogram } from '../../platform/metrics.js';
import type { Logger } from '../../platform/log.js';
import type { SetError } from '../../schemas/ssf.js';

/** Why a push was answered 503 (nothing refused: the transmitter retries). */
export type UnavailableReason = 'saturated' | 'not-durable' | 'keys-unavailable';

const sets = counter({
  name: 'hooklog_ssf_receiver_sets_total',
  help: 'SETs pushed to an SSF receiver, by result: accepted (durable, 202), duplicate (a jti already accepted, 202 without appending), refused (400, by RFC 8935 err; dead-lettered), unavailable (503: saturated, not durable in time, or the keys could not be fetched).',
  labelNames: ['receiver', 'result', 'err'],
});
const ackSeconds = histogram({
  name: 'hooklog_ssf_receiver_ack_seconds',
  help: "From a push's arrival to its 202: reading, verifying, and the stream's durable acknowledgement.",
  labelNames: ['receiver'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
});
const fetches = counter({
  name: 'hooklog_ssf_receiver_key_fetches_total',
  help: "Fetches of a transmitter's key set (jwks) or SSF configuration document, by outcome (ok, failed).",
  labelNames: ['receiver', 'what', 'outcome'],
});

export interface PushFacts {
  /** A configured receiver id, or "unknown". */
  readonly receiver: string;
  readonly requestId: string;
}

export type SsfReceiverTelemetry = ReturnType<typeof createSsfReceiverTelemetry>;

export function createSsfReceiverTelemetry(logger: Logger) {
  const log = logger.child({ component: 'ssf-receiver' });
  return {
    accepted(f: PushFacts, seconds: number): void {
      sets.inc({ receiver: f.receiver, result: 'accepted', err: '' });
      ackSeconds.observe({ receiver: f.receiver }, seconds);
      log.info({ receiver: f.receiver, request_id: f.requestId, ms: Math.round(seconds * 1000) }, 'ssf_set_accepted');
    },
    duplicate(f: PushFacts, seconds: number): void {
      sets.inc({ receiver: f.receiver, result: 'duplicate', err: '' });
      ackSeconds.observe({ receiver: f.receiver }, seconds);
      log.info({ receiver: f.receiver, request_id: f.requestId }, 'ssf_set_duplicate');
    },
    /**
     * The description goes to the transmitter and the dead letter, never to the log: it can quote the SET's
     * header (a kid, a typ, an event type), which is untrusted. The request id finds the dead letter.
     */
    refused(f: PushFacts, err: SetError): void {
      sets.inc({ receiver: f.receiver, result: 'refused', err });
      log.warn({ receiver: f.receiver, request_id: f.requestId, err }, 'ssf_set_refused');
    },
    unavailable(f: PushFacts, reason: UnavailableReason, why: string): void {
      sets.inc({ receiver: f.receiver, result: 'unavailable', err: '' });
      log.warn({ receiver: f.receiver, request_id: f.requestId, reason, why }, 'ssf_set_unavailable');
    },
    /** A push to a receiver id that is not configured: 404, nothing read or kept. */
    unknownReceiver(f: PushFacts): void {
      sets.inc({ receiver: 'unknown', result: 'refused', err: 'invalid_request' });
      log.info({ request_id: f.requestId }, 'ssf_unknown_receiver');
    },
    keysFetched(receiver: string, what: 'jwks' | 'configuration', ok: boolean, ms: number, why?: string): void {
      fetches.inc({ receiver, what, outcome: ok ? 'ok' : 'failed' });
      if (ok) log.debug({ receiver, what, ms: Math.round(ms) }, 'ssf_keys_fetched');
      else log.warn({ receiver, what, ms: Math.round(ms), why }, 'ssf_keys_fetch_failed');
    },
  };
}
