/**
 * Verifying one SET (RFC 8417) pushed to a receiver, with jose, into either
 * its verified claims or the RFC 8935 `err` code and a description.
 *
 * Order matters: what the protected header alone decides (compact JWS shape,
 * `typ: secevent+jwt`, the algorithm allow-list, so `alg: none` and HMAC never
 * reach a key lookup) is refused before the key set is consulted; the claims
 * are trusted only once the signature verified, so a SET with a wrong `iss`
 * signed by a key we do not hold is `invalid_key`, not `invalid_issuer`.
 *
 * | refusal                                              | err                  |
 * |------------------------------------------------------|----------------------|
 * | not a compact JWS, undecodable, not JSON claims       | invalid_request      |
 * | `typ` other than secevent+jwt                         | invalid_request      |
 * | iat missing, in the future, older than max_age; exp past; no jti; no events | invalid_request |
 * | alg none, HMAC, or not in `algorithms`                | invalid_key          |
 * | kid not in the key set (unknown, or removed on rotation), no kid among several keys | invalid_key |
 * | signature does not verify                             | authentication_failed|
 * | iss ≠ `issuer`                                        | invalid_issuer       |
 * | aud missing or not an accepted audience               | invalid_audience     |
 * | an event type not in `event_types`                    | access_denied        |
 */
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import type { SsfReceiverConfig } from './receiver-config.js';
import { KeysUnavailable } from './keys.js';
import type { JWTVerifyGetKey } from 'jose';
import type { SetError } from '../../schemas/ssf.js';

export interface VerifiedSet {
  readonly ok: true;
  readonly claims: SetClaims;
  readonly alg: string;
  readonly kid: string | undefined;
}
export interface RefusedSet {
  readonly ok: false;
  readonly err: SetError;
  /** For the transmitter and the dead letter; never the token or its claims' values beyond their names. */
  readonly description: string;
}
/** The keys could not be had (KeysUnavailable): 503, not a refusal. */
export interface UnverifiableSet {
  readonly ok: 'unavailable';
  readonly why: string;
}
export type SetVerdict = VerifiedSet | RefusedSet | UnverifiableSet;

/** The claims of a verified SET that hooklog relies on; the rest is kept as sent. */
export interface SetClaims extends JWTPayload {
  readonly iss: string;
  readonly jti: string;
  readonly iat: number;
  readonly events: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** Compact JWS: three base64url parts (the signature may be empty, as alg none makes it). JWE has five. */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const MAX_JTI_LENGTH = 256;

const refuse = (err: SetError, description: string): RefusedSet => ({ ok: false, err, description });

/** jose's normalisation of a media type (`application/` dropped, case folded), as its own typ check does. */
function normalTyp(typ: unknown): string | undefined {
  return typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : undefined;
}

export async function verifySet(token: string, cfg: SsfReceiverConfig, getKey: JWTVerifyGetKey): Promise<SetVerdict> {
  if (!COMPACT_JWS.test(token))
    return refuse(
      'invalid_request',
      token.split('.').length === 5
        ? 'encrypted SETs (JWE) are not accepted: send a signed SET'
        : 'the body is not a compact JWS (header.payload.signature)',
    );
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return refuse('invalid_request', 'the JOSE header is not base64url-encoded JSON');
  }
  if (normalTyp(header.typ) !== 'secevent+jwt')
    return refuse(
      'invalid_request',
      `not a SET: the JOSE header typ must be "secevent+jwt" (got ${header.typ === undefined ? 'none' : JSON.stringify(String(header.typ).slice(0, 64))})`,
    );
  const alg = header.alg;
  if (typeof alg !== 'string' || !(cfg.algorithms as readonly string[]).includes(alg))
    return refuse(
      'invalid_key',
      `alg ${JSON.stringify(String(alg).slice(0, 32))} is not accepted: sign with one of ${cfg.algorithms.join(', ')}`,
    );
  if (header.kid !== undefined && typeof header.kid !== 'string')
    return refuse('invalid_request', 'the JOSE header kid is not a string');

  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, getKey, {
      issuer: cfg.issuer,
      audience: cfg.audience,
      algorithms: cfg.algorithms,
      typ: 'secevent+jwt',
      clockTolerance: cfg.clock_tolerance_s,
      // Also refuses an iat in the future (beyond the tolerance): jose checks that only with a maximum age.
      maxTokenAge: cfg.max_age_s,
      requiredClaims: ['jti', 'iat', 'events'],
    }));
  } catch (err) {
    return classify(err, header.kid);
  }
  return checkClaims(payload, cfg, alg, header.kid);
}

/** The SET-specific claims, once jose verified the signature and the registered claims. */
function checkClaims(payload: JWTPayload, cfg: SsfReceiverConfig, alg: string, kid: string | undefined): SetVerdict {
  const { jti, events } = payload as Record<string, unknown>;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH)
    return refuse('invalid_request', `jti must be a string of 1 to ${MAX_JTI_LENGTH} characters`);
  if (events === null || typeof events !== 'object' || Array.isArray(events))
    return refuse('invalid_request', 'events must be a JSON object keyed by event type URI');
  const types = Object.keys(events);
  if (types.length === 0) return refuse('invalid_request', 'events holds no event');
  for (const type of types) {
    const event = (events as Record<string, unknown>)[type];
    if (event === null || typeof event !== 'object' || Array.isArray(event))
      return refuse(
        'invalid_request',
        `the payload of event ${JSON.stringify(type.slice(0, 200))} is not a JSON object`,
      );
    if (!cfg.event_types.includes(type))
      return refuse(
        'access_denied',
        `event type ${JSON.stringify(type.slice(0, 200))} is not accepted by this receiver`,
      );
  }
  return { ok: true, claims: payload as SetClaims, alg, kid };
}

/** jose's error (or the key set's unavailability) as an RFC 8935 refusal. */
export function classify(err: unknown, kid: string | undefined): SetVerdict {
  if (err instanceof KeysUnavailable) return { ok: 'unavailable', why: err.message };
  if (err instanceof errors.JWKSNoMatchingKey)
    return refuse(
      'invalid_key',
      kid === undefined
        ? "no key of the transmitter's key set fits this SET's alg"
        : `kid ${JSON.stringify(kid.slice(0, 128))} is not in the transmitter's key set (unknown, or removed)`,
    );
  if (err instanceof errors.JWKSMultipleMatchingKeys)
    return refuse('invalid_key', 'the SET names no kid and several keys of the key set fit: name the kid');
  if (err instanceof errors.JWKSInvalid || err instanceof errors.JOSENotSupported)
    return refuse('invalid_key', `the key for this SET is unusable: ${err.message}`);
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return refuse('authentication_failed', 'the signature does not verify with the named key');
  if (err instanceof errors.JOSEAlgNotAllowed) return refuse('invalid_key', err.message);
  if (err instanceof errors.JWTExpired)
    return refuse(
      'invalid_request',
      err.claim === 'iat' ? 'the SET is older than this receiver accepts (iat)' : 'the SET has expired (exp)',
    );
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return refuse('invalid_issuer', 'iss is not the issuer this receiver trusts');
    if (err.claim === 'aud') return refuse('invalid_audience', 'aud does not name this receiver');
    return refuse('invalid_request', `claim ${err.claim}: ${err.message}`);
  }
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid)
    return refuse('invalid_request', err.message);
  // Anything else came from a SET we could not make sense of; its bytes are dead-lettered with this reason.
  return refuse(
    'invalid_request',
    `the SET could not be verified: ${err instanceof Error ? err.message : String(err)}`,
  );
}
