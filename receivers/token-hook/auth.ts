/**
 * Token hook authentication: the header secret of event hooks (same
 * constant-time matcher), or an OAuth 2.0 bearer JWT from the customer's
 * authorization server, verified with jose against the issuer's keys.
 *
 * The algorithm allow-list is checked before any key is looked up: `none`,
 * and HMAC tokens "signed" with a public key taken as a shared secret, are
 * refused without touching the key set. Failures carry a reason from a
 * closed list (metrics label, log field), never the token or its claims.
 */
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { SecretMatcher } from '../../platform/secret-matcher.js';
import type { OAuthConfig, TokenHookConfig } from './config.js';
import { JwksCache, type AsymmetricAlgorithm, type JwksEvents } from './jwks.js';

export const AUTH_FAILURES = [
  'secret',
  'missing',
  'malformed',
  'algorithm',
  'unknown_key',
  'signature',
  'expired',
  'not_yet_valid',
  'issuer',
  'audience',
  'scope',
  'claims',
] as const;
export type AuthFailure = (typeof AUTH_FAILURES)[number];

export type AuthResult = { readonly ok: true } | { readonly ok: false; readonly reason: AuthFailure };

const OK: AuthResult = Object.freeze({ ok: true });
const fail = (reason: AuthFailure): AuthResult => ({ ok: false, reason });

/** Reads a request header by (case-insensitive) name. */
export type HeaderGetter = (name: string) => string;

export interface Authenticator {
  /**
   * A shared secret is checked synchronously (a plain result: no promise and no microtask turn on every
   * sign-in); a bearer JWT may wait for its issuer's keys.
   */
  check(header: HeaderGetter): AuthResult | Promise<AuthResult>;
  start(): Promise<void>;
  stop(): void;
}

const BEARER = /^Bearer\s+([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)\s*$/i;

function hasScope(payload: JWTPayload, scope: string): boolean {
  const scp = payload.scp;
  if (Array.isArray(scp)) return scp.includes(scope);
  if (typeof scp === 'string') return scp.split(' ').includes(scope);
  return false;
}

/** jose's error, as one of our reasons. */
export function classifyJoseError(err: unknown): AuthFailure {
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return 'not_yet_valid';
    if (err.claim === 'iss') return 'issuer';
    if (err.claim === 'aud') return 'audience';
    return 'claims';
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'algorithm';
  return 'malformed';
}

class BearerAuthenticator implements Authenticator {
  readonly #cfg: OAuthConfig;
  readonly #algorithms: ReadonlySet<string>;
  readonly #jwks: JwksCache;

  constructor(cfg: OAuthConfig, events: JwksEvents) {
    this.#cfg = cfg;
    this.#algorithms = new Set(cfg.algorithms);
    this.#jwks = new JwksCache({
      url: cfg.jwks_url ?? `${cfg.issuer.replace(/\/+$/, '')}/v1/keys`,
      timeoutMs: cfg.jwks_timeout_ms,
      minRefreshIntervalMs: cfg.jwks_min_refresh_interval_ms,
      refreshIntervalMs: cfg.jwks_refresh_interval_ms,
      events,
    });
  }

  start(): Promise<void> {
    return this.#jwks.start();
  }

  stop(): void {
    this.#jwks.stop();
  }

  async check(header: HeaderGetter): Promise<AuthResult> {
    const authorization = header('authorization');
    if (!authorization) return fail('missing');
    const token = BEARER.exec(authorization)?.[1];
    if (!token) return fail('malformed');
    let alg: unknown;
    let kid: unknown;
    try {
      ({ alg, kid } = decodeProtectedHeader(token));
    } catch {
      return fail('malformed');
    }
    if (typeof alg !== 'string' || !this.#algorithms.has(alg)) return fail('algorithm');
    if (kid !== undefined && typeof kid !== 'string') return fail('malformed');
    const key = await this.#jwks.keyFor(kid, alg as AsymmetricAlgorithm);
    if (!key) return fail('unknown_key');
    try {
      const { payload } = await jwtVerify(token, key, {
        issuer: this.#cfg.issuer,
        audience: this.#cfg.audience,
        algorithms: this.#cfg.algorithms,
        clockTolerance: this.#cfg.clock_tolerance_s,
        requiredClaims: ['exp'],
      });
      return hasScope(payload, this.#cfg.scope) ? OK : fail('scope');
    } catch (err) {
      return fail(classifyJoseError(err));
    }
  }
}

class SecretAuthenticator implements Authenticator {
  readonly #header: string;
  readonly #matcher: SecretMatcher;

  constructor(header: string, secrets: readonly string[]) {
    this.#header = header;
    this.#matcher = new SecretMatcher(secrets);
  }

  check(header: HeaderGetter): AuthResult {
    return this.#matcher.matches(header(this.#header)) ? OK : fail('secret');
  }

  async start(): Promise<void> {}

  stop(): void {}
}

/** The authenticator a hook's `auth:` describes. */
export function createAuthenticator(auth: TokenHookConfig['auth'], events: JwksEvents): Authenticator {
  return auth.type === 'header'
    ? new SecretAuthenticator(auth.header, auth.secrets)
    : new BearerAuthenticator(auth, events);
}
