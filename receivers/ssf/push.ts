/**
 * One RFC 8935 push to `POST /hooks/ssf/:id`, after the receiver was found.
 * Invariants:
 *
 * - 202 only once the SET's two records (the SET on `<prefix>.security-events`,
 *   its LogEvent on `<prefix>.logs`) are durable, in one atomic append, within
 *   `ack_timeout_ms`; otherwise 503 so the transmitter re-sends it unchanged.
 * - 400 with `{err, description}` only once the refused bytes are durable in
 *   the deadletter topic with the reason and err (by size alone past the body
 *   limit); if they cannot be, 503: a refusal never loses the payload, and
 *   nothing refused is ever appended as an event.
 * - A jti already accepted (or being appended) is answered 202 without a
 *   second append; forgetting it (capacity, TTL, restart) costs one more
 *   append, which the table folds by (org, issuer, jti) and the events table
 *   by the uuid derived from them.
 * - The keys being unavailable is our outage, not the SET's fault: 503.
 * - In-flight pushes are bounded; a push keeps its slot until its append
 *   settles, even after its 503.
 */
import type { Context } from 'koa';
import { Header, deadLetter, type Topics } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import type { SecretMatcher } from '../../platform/secret-matcher.js';
import { declaredLength, isTooLarge, readBody } from '../body.js';
import { RecentDeliveries, deliveryKey } from '../event-hooks/dedupe.js';
import { InFlightLimit, type Permit } from '../event-hooks/in-flight.js';
import { within } from '../event-hooks/receive.js';
import type { TransmitterKeys } from './keys.js';
import type { SsfReceiverConfig } from './receiver-config.js';
import type { PushFacts, SsfReceiverTelemetry, UnavailableReason } from './receiver-telemetry.js';
import { REQUEST_ID_HEADER, SET_ERR_HEADER, SSF_ORIGIN, SSF_SOURCE, setRecords } from './set-record.js';
import type { SetError } from '../../schemas/ssf.js';
import { verifySet } from './verify.js';

const BODY_BYTES_HEADER = 'hooklog-body-bytes';
export const SET_CONTENT_TYPE = 'application/secevent+jwt';

/** A configured receiver with what it holds: its keys, limits and recent jtis. */
export class Receiver {
  readonly cfg: SsfReceiverConfig;
  readonly keys: TransmitterKeys;
  readonly authorization: SecretMatcher | undefined;
  readonly inFlight: InFlightLimit;
  readonly recent: RecentDeliveries;

  constructor(cfg: SsfReceiverConfig, keys: TransmitterKeys, authorization: SecretMatcher | undefined) {
    this.cfg = cfg;
    this.keys = keys;
    this.authorization = authorization;
    this.inFlight = new InFlightLimit({
      maxDeliveries: cfg.max_in_flight,
      maxBytes: cfg.max_in_flight * cfg.max_body_bytes,
    });
    this.recent = new RecentDeliveries({ capacity: cfg.dedupe_capacity, ttlMs: cfg.dedupe_ttl_ms });
  }
}

export interface PushDeps {
  readonly stream: Stream;
  readonly topics: Pick<Topics, 'logs' | 'deadletter' | 'securityEvents'>;
  readonly telemetry: SsfReceiverTelemetry;
}

export async function handlePush(ctx: Context, r: Receiver, facts: PushFacts, deps: PushDeps): Promise<void> {
  const started = performance.now();
  const remaining = () => r.cfg.ack_timeout_ms - (performance.now() - started);
  const limit = r.cfg.max_body_bytes;
  const permit = r.inFlight.tryAcquire(Math.min(declaredLength(ctx.req) ?? limit, limit));
  if (!permit) return unavailable(ctx, r, facts, deps, 'saturated', 'too many pushes in flight');
  let kept = false;
  try {
    // The stream's own Authorization header, when configured: an unauthenticated push is not read or kept.
    if (r.authorization && !r.authorization.matches(ctx.get('authorization'))) {
      ctx.req.resume();
      deps.telemetry.refused(facts, 'authentication_failed');
      return answer(ctx, 400, {
        err: 'authentication_failed',
        description: 'the Authorization header is missing or wrong',
      });
    }
    let body: Buffer;
    try {
      body = await readBody(ctx.req, limit);
    } catch (err) {
      if (!isTooLarge(err)) {
        // The client went away or broke the framing: nobody to answer, no whole payload to keep.
        ctx.status = 400;
        return;
      }
      ctx.set('Connection', 'close');
      const size = String(err.declaredBytes ?? err.receivedBytes);
      kept = await refuse(ctx, r, facts, deps, permit, remaining(), Buffer.alloc(0), 'invalid_request', err.message, {
        [BODY_BYTES_HEADER]: size,
      });
      return;
    }
    permit.shrink(body.length);
    if (!ctx.is(SET_CONTENT_TYPE)) {
      const type = ctx.get('content-type');
      const why = `Content-Type ${type ? JSON.stringify(type.slice(0, 100)) : '(none)'} is not ${SET_CONTENT_TYPE}`;
      kept = await refuse(ctx, r, facts, deps, permit, remaining(), body, 'invalid_request', why);
      return;
    }
    const receivedAt = new Date();
    // A compact JWS is ASCII; latin1 maps every byte to one character, so anything else fails its shape check.
    const token = body.toString('latin1').trim();
    const verdict = await verifySet(token, r.cfg, r.keys.getKey);
    if (verdict.ok === 'unavailable') return unavailable(ctx, r, facts, deps, 'keys-unavailable', verdict.why);
    if (!verdict.ok) {
      kept = await refuse(ctx, r, facts, deps, permit, remaining(), body, verdict.err, verdict.description);
      return;
    }
    const key = deliveryKey(r.cfg.id, verdict.claims.jti);
    const seen = r.recent.lookup(key);
    // A repeat of a SET still being appended joins that append; only a failed one is appended again.
    const prior =
      seen?.state === 'pending'
        ? await within(
            seen.settled.then((ok) => ok || Promise.reject(new Error('the earlier append failed'))),
            remaining(),
          )
        : undefined;
    if (seen?.state === 'done' || prior === 'ok') {
      deps.telemetry.duplicate(facts, (performance.now() - started) / 1000);
      return accepted(ctx);
    }
    if (prior === 'timeout')
      return unavailable(ctx, r, facts, deps, 'not-durable', 'an earlier copy of this SET is still being appended');

    const records = setRecords({
      receiverId: r.cfg.id,
      org: r.cfg.org,
      token,
      claims: verdict.claims,
      alg: verdict.alg,
      kid: verdict.kid,
      receivedAt,
      requestId: facts.requestId,
    });
    const work = deps.stream.appendAtomically([
      { topic: deps.topics.securityEvents, records: [records.set] },
      { topic: deps.topics.logs, records: [records.logEvent] },
    ]);
    r.recent.track(key, work);
    kept = holdUntilSettled(permit, work);
    const outcome = await within(work, remaining());
    if (outcome !== 'ok')
      return unavailable(ctx, r, facts, deps, 'not-durable', outcome === 'timeout' ? 'timeout' : outcome.message);
    deps.telemetry.accepted(facts, (performance.now() - started) / 1000);
    accepted(ctx);
  } finally {
    if (!kept) permit.release();
  }
}

/**
 * Dead-letters a refused push (raw bytes, the err and why), then answers 400
 * with them; 503 instead when the dead letter is not durable in time.
 * Returns true when the permit now waits for the append to settle.
 */
async function refuse(
  ctx: Context,
  r: Receiver,
  facts: PushFacts,
  deps: PushDeps,
  permit: Permit,
  budgetMs: number,
  raw: Buffer,
  err: SetError,
  description: string,
  extra: Record<string, string> = {},
): Promise<boolean> {
  const headers = {
    [Header.source]: SSF_SOURCE,
    [Header.hookId]: r.cfg.id,
    [Header.org]: r.cfg.org,
    [Header.receivedAt]: new Date().toISOString(),
    [REQUEST_ID_HEADER]: facts.requestId,
    [SET_ERR_HEADER]: err,
    [BODY_BYTES_HEADER]: String(raw.length),
    ...extra,
  };
  const work = deps.stream.append(deps.topics.deadletter, [
    deadLetter(raw, `${err}: ${description}`, SSF_ORIGIN, headers, r.cfg.org),
  ]);
  const kept = holdUntilSettled(permit, work);
  const outcome = await within(work, budgetMs);
  if (outcome !== 'ok') {
    unavailable(
      ctx,
      r,
      facts,
      deps,
      'not-durable',
      `dead letter not durable: ${outcome === 'timeout' ? 'timeout' : outcome.message}`,
    );
    return kept;
  }
  deps.telemetry.refused(facts, err);
  answer(ctx, 400, { err, description: description.slice(0, 1000) });
  return kept;
}

function unavailable(
  ctx: Context,
  r: Receiver,
  facts: PushFacts,
  deps: PushDeps,
  reason: UnavailableReason,
  why: string,
): void {
  deps.telemetry.unavailable(facts, reason, why);
  ctx.set('Retry-After', '1');
  answer(ctx, 503, {
    description:
      reason === 'saturated'
        ? 'too many pushes in flight, retry later'
        : reason === 'keys-unavailable'
          ? `the transmitter's keys could not be fetched, retry later (receiver ${r.cfg.id})`
          : 'not durable in time, retry',
  });
}

/** RFC 8935 §2.2: 202 with an empty body (Koa would otherwise write the status text). */
function accepted(ctx: Context): void {
  ctx.status = 202;
  ctx.body = '';
  ctx.remove('Content-Type');
}

function answer(ctx: Context, status: number, body: Record<string, string>): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = body;
}

/** Releases `permit` once `work` settles; true (the caller must not release it itself). */
function holdUntilSettled(permit: Permit, work: Promise<unknown>): true {
  work.then(
    () => permit.release(),
    () => permit.release(),
  );
  return true;
}
