/**
 * The org as a Shared Signals receiver (protocols.md §8): `POST
 * /security/api/v1/security-events` takes SETs from a registered security
 * events provider, verified the way the service does it:
 *
 * - the provider is registered with an issuer and a well-known SSF
 *   configuration URL; the JWKS is fetched from the document's `jwks_uri`
 *   (jose remote key set: cached, refetched for an unknown kid);
 * - `Content-Type: application/secevent+jwt`, a compact JWS with
 *   `typ: secevent+jwt`, RS256/ES256, a known `kid`, a valid signature,
 *   `iss` = the provider's issuer, `aud` = the org, `jti`, `iat`, and events
 *   the service accepts with their required fields;
 * - 202 with no body when accepted, a repeated `jti` included (counted once);
 *   400 `{"err", "description"}` with the RFC 8935 code otherwise.
 *
 * Accepted SETs are kept (token bytes, header, claims) so tests can check that
 * repeats are byte-identical and count distinct jtis. `onReceive` runs before
 * the answer (a test kills hooklog there); `failNext` answers 503s, and
 * `faults` (faults.ts) any status, queued or at a seeded random rate.
 */
import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import type { RawReply, SimApi, SimOrg, SimRequest } from './api.js';
import { FaultPlan, takeStatusFault } from './faults.js';

export const USER_RISK_CHANGE = 'https://schemas.okta.com/secevent/okta/event-type/user-risk-change';
const LEVELS = ['low', 'medium', 'high'];

export interface ReceivedSet {
  readonly jti: string;
  readonly token: string;
  readonly header: Record<string, unknown>;
  readonly claims: JWTPayload & { events: Record<string, Record<string, unknown>> };
  readonly at: number;
  /** A jti this org had already accepted. */
  readonly repeat: boolean;
}

export interface Refusal {
  readonly err: string;
  readonly description: string;
  readonly token: string;
}

export interface SecurityEventsOptions {
  /** The registered provider's issuer. */
  readonly issuer: string;
  /** The provider's `/.well-known/ssf-configuration` URL. */
  readonly wellKnownUrl: string;
  /** The audience SETs must name. Default the org's URL. */
  readonly audience?: string;
}

export class SecurityEventsApi implements SimApi {
  readonly name = 'security-events';
  /** Every accepted push, repeats included, in order. */
  readonly accepted: ReceivedSet[] = [];
  readonly refused: Refusal[] = [];
  /** The body of every push, answered or failed, in order. */
  readonly pushes: string[] = [];
  /** Runs before an accepted SET is answered. */
  onReceive: ((set: ReceivedSet) => Promise<void> | void) | null = null;
  /** Status faults for pushes (within the bucket: a fault spends a request), answered without looking at the SET. */
  readonly faults = new FaultPlan();
  readonly #o: SecurityEventsOptions;
  #keys: ReturnType<typeof createRemoteJWKSet> | null = null;

  constructor(opts: SecurityEventsOptions) {
    this.#o = opts;
  }

  /** Distinct jtis accepted. */
  get distinct(): number {
    return new Set(this.accepted.map((s) => s.jti)).size;
  }

  /** The first accepted copy of each jti. */
  get sets(): ReceivedSet[] {
    return this.accepted.filter((s) => !s.repeat);
  }

  /** The next `n` pushes are answered `status` (503 by default) without being looked at. */
  failNext(n: number, status = 503): void {
    this.faults.next(...Array.from({ length: n }, () => ({ kind: 'status' as const, status })));
  }

  async handle(req: SimRequest, org: SimOrg): Promise<RawReply | null> {
    if (req.url.pathname !== '/security/api/v1/security-events') return null;
    if (req.method !== 'POST') return this.#json(405, { err: 'invalid_request', description: 'POST only' });
    const limit = org.admit('security-events');
    if (limit.refused)
      return {
        status: 429,
        raw: JSON.stringify(limit.refused.body),
        headers: limit.refused.headers ?? {},
        violation: limit.refused.violation,
      };
    this.pushes.push(req.body.toString('utf8'));
    const fault = takeStatusFault(this.faults, req.rec, this.name);
    if (fault)
      return this.#json(
        fault.status,
        { errorCode: fault.errorCode, errorSummary: 'Internal Server Error' },
        limit.headers,
      );
    const token = req.body.toString('utf8').trim();
    const type = (req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const refuse = (err: string, description: string) => {
      this.refused.push({ err, description, token });
      return this.#json(400, { err, description }, limit.headers);
    };
    if (type !== 'application/secevent+jwt')
      return refuse('invalid_request', `Content-Type must be application/secevent+jwt, not ${type || 'absent'}`);
    let header: Record<string, unknown>;
    try {
      header = decodeProtectedHeader(token) as Record<string, unknown>;
    } catch {
      return refuse('invalid_request', 'the body is not a compact JWS');
    }
    if (header.typ !== 'secevent+jwt')
      return refuse('invalid_request', `typ must be secevent+jwt, not ${String(header.typ)}`);
    let claims: ReceivedSet['claims'];
    try {
      const { payload } = await jwtVerify(token, await this.#jwks(), {
        algorithms: ['RS256', 'ES256'],
        typ: 'secevent+jwt',
        issuer: this.#o.issuer,
        audience: this.#o.audience ?? org.url,
      });
      claims = payload as ReceivedSet['claims'];
    } catch (err) {
      return refuse(...classify(err));
    }
    const problem = checkClaims(claims);
    if (problem) return refuse('invalid_request', problem);
    const jti = claims.jti!;
    const set: ReceivedSet = {
      jti,
      token,
      header,
      claims,
      at: req.now,
      repeat: this.accepted.some((s) => s.jti === jti),
    };
    await this.onReceive?.(set);
    this.accepted.push(set);
    return { status: 202, raw: '', headers: limit.headers };
  }

  async #jwks() {
    if (!this.#keys) {
      const res = await fetch(this.#o.wellKnownUrl, { signal: AbortSignal.timeout(5000) });
      if (!res.ok) throw new Error(`the provider's SSF configuration answered ${res.status}`);
      const doc = (await res.json()) as { issuer?: string; jwks_uri?: string };
      if (doc.issuer !== this.#o.issuer) throw new Error(`the SSF configuration names issuer ${doc.issuer}`);
      this.#keys = createRemoteJWKSet(new URL(doc.jwks_uri!), { cooldownDuration: 1000 });
    }
    return this.#keys;
  }

  #json(status: number, body: unknown, headers: Record<string, string> = {}): RawReply {
    return { status, raw: JSON.stringify(body), headers: { ...headers, 'content-type': 'application/json' } };
  }
}

/** jose's verdict as an RFC 8935 error. */
function classify(err: unknown): [string, string] {
  const msg = err instanceof Error ? err.message : String(err);
  if (err instanceof errors.JWKSNoMatchingKey)
    return ['invalid_key', `no key of the provider matches the SET's kid: ${msg}`];
  if (err instanceof errors.JWSSignatureVerificationFailed) return ['invalid_key', 'the signature does not verify'];
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return ['invalid_issuer', msg];
    if (err.claim === 'aud') return ['invalid_audience', msg];
    return ['invalid_request', msg];
  }
  return ['invalid_request', msg];
}

/** What the service requires of the SET's claims and of the events it accepts; null when all is well. */
function checkClaims(c: ReceivedSet['claims']): string | null {
  if (typeof c.jti !== 'string' || c.jti === '') return 'jti is required';
  if (typeof c.iat !== 'number') return 'iat is required';
  const events = c.events;
  if (!events || typeof events !== 'object' || Object.keys(events).length === 0)
    return 'events must name at least one event';
  for (const [type, e] of Object.entries(events)) {
    if (type !== USER_RISK_CHANGE) return `event type ${type} is not supported`;
    const user = (e.subject as { user?: Record<string, unknown> } | undefined)?.user;
    const subjectOk =
      (user?.format === 'email' && typeof user.email === 'string') ||
      (user?.format === 'iss_sub' && typeof user.iss === 'string' && typeof user.sub === 'string');
    if (!subjectOk) return 'subject.user must be an email or iss_sub identifier';
    if (!LEVELS.includes(String(e.current_level)) || !LEVELS.includes(String(e.previous_level)))
      return 'current_level and previous_level must be low, medium or high';
    if (!Number.isInteger(e.event_timestamp)) return 'event_timestamp must be a Unix time in seconds';
    if (!['admin', 'user', 'policy', 'system'].includes(String(e.initiating_entity)))
      return 'initiating_entity is invalid';
  }
  return null;
}
