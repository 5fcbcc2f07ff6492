/**
 * Sign-in through the identity service: OpenID Connect authorization code with
 * PKCE (S256). The endpoints come from the issuer's discovery document (read
 * once, again after a failure); the ID token is verified with jose against the
 * issuer's key set (`createRemoteJWKSet`: its cache and cooldown are the
 * rotation story), with an algorithm allow-list, issuer, audience, nonce and a
 * stated clock tolerance. The group claim decides the orgs and the role.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { HooklogError } from '../platform/errors.js';
import type { Principal, Role } from '../platform/access.js';
import type { ConsoleConfig } from './config.js';

type OidcConfig = NonNullable<ConsoleConfig['oidc']>;

/** Asymmetric only: an HS256 token would be checked against a key the client holds. */
const ALGORITHMS = ['RS256', 'PS256', 'ES256'];
const FETCH_TIMEOUT_MS = 5000;

/** What the identity service grants: the principal, and the refresh token for the next regrant. */
export interface Granted {
  readonly principal: Principal;
  readonly refreshToken?: string;
}

interface Discovery {
  readonly issuer: string;
  readonly authorization_endpoint: string;
  readonly token_endpoint: string;
  readonly jwks_uri: string;
}

/** A random URL-safe value (state, nonce, PKCE verifier): 32 bytes. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The PKCE S256 challenge of a verifier (RFC 7636 §4.2). */
export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/**
 * The orgs and role the groups grant: the union of the orgs of every grant
 * whose group the user is in, and analyst if any of those grants says so.
 * Undefined when none applies (the user may not use the console).
 */
export function grantsFor(
  groups: readonly string[],
  grants: OidcConfig['grants'],
): { orgs: string[]; role: Role } | undefined {
  const mine = grants.filter((g) => groups.includes(g.group));
  if (mine.length === 0) return undefined;
  return {
    orgs: [...new Set(mine.flatMap((g) => g.orgs))].sort(),
    role: mine.some((g) => g.role === 'analyst') ? 'analyst' : 'viewer',
  };
}

export class OidcClient {
  readonly #o: OidcConfig;
  readonly #redirectUri: string;
  #discovery: Promise<{ doc: Discovery; keys: JWTVerifyGetKey }> | undefined;

  constructor(o: OidcConfig, redirectUri: string) {
    this.#o = o;
    this.#redirectUri = redirectUri;
  }

  #discover(): Promise<{ doc: Discovery; keys: JWTVerifyGetKey }> {
    this.#discovery ??= (async () => {
      const url = `${this.#o.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
      const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'error' });
      if (!res.ok) throw new HooklogError('IDP_UNAVAILABLE', `OIDC discovery ${url} answered ${res.status}`);
      const doc = (await res.json()) as Partial<Discovery>;
      for (const k of ['issuer', 'authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const)
        if (typeof doc[k] !== 'string') throw new HooklogError('IDP_UNAVAILABLE', `OIDC discovery lacks ${k}`);
      return { doc: doc as Discovery, keys: createRemoteJWKSet(new URL(doc.jwks_uri!)) };
    })();
    // A failed discovery is tried again on the next sign-in rather than remembered.
    this.#discovery.catch(() => (this.#discovery = undefined));
    return this.#discovery;
  }

  /** Where to send the browser: the authorization endpoint with state, nonce and the PKCE challenge. */
  async authorizeUrl(state: string, nonce: string, verifier: string): Promise<string> {
    const { doc } = await this.#discover();
    const u = new URL(doc.authorization_endpoint);
    u.search = new URLSearchParams({
      response_type: 'code',
      client_id: this.#o.client_id,
      redirect_uri: this.#redirectUri,
      scope: this.#o.scopes.join(' '),
      state,
      nonce,
      code_challenge: pkceChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    return u.toString();
  }

  /**
   * Exchanges the code (with the PKCE verifier) for tokens and verifies the ID
   * token; the principal its groups grant and the refresh token (asked for
   * with `offline_access`, for regrants), or IDP_AUTH_FAILED saying why not.
   */
  async signIn(code: string, verifier: string, nonce: string): Promise<Granted> {
    const tokens = await this.#token({
      grant_type: 'authorization_code',
      code,
      redirect_uri: this.#redirectUri,
      code_verifier: verifier,
    });
    const payload = await this.#verifyIdToken(tokens.idToken);
    if (payload.nonce !== nonce)
      throw new HooklogError('IDP_AUTH_FAILED', "the ID token's nonce is not this sign-in's");
    return {
      principal: this.#principal(payload),
      ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
    };
  }

  /**
   * Re-checks the groups of the user `sub` with a refresh token (the refresh
   * grant, RFC 6749 §6): the principal they grant now and the refresh token to
   * keep (the identity service may rotate it). IDP_AUTH_FAILED when the grant
   * is gone (the token refused, the user in no group of the console's);
   * IDP_UNAVAILABLE (retriable) when the identity service cannot answer.
   */
  async regrant(refreshToken: string, sub: string): Promise<Granted> {
    const tokens = await this.#token({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      scope: this.#o.scopes.join(' '),
    });
    const payload = await this.#verifyIdToken(tokens.idToken);
    // OIDC Core §12.2: the refreshed ID token is the same user's.
    if (payload.sub !== sub) throw new HooklogError('IDP_AUTH_FAILED', "the refreshed ID token is another user's");
    return { principal: this.#principal(payload), refreshToken: tokens.refreshToken ?? refreshToken };
  }

  async #token(grant: Record<string, string>): Promise<{ idToken: string; refreshToken?: string }> {
    const { doc } = await this.#discover();
    const form = new URLSearchParams({
      ...grant,
      client_id: this.#o.client_id,
      ...(this.#o.client_secret ? { client_secret: this.#o.client_secret } : {}),
    });
    let res: Response;
    try {
      res = await fetch(doc.token_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
        redirect: 'error',
      });
    } catch (err) {
      throw new HooklogError('IDP_UNAVAILABLE', `the token endpoint cannot be reached (${(err as Error).message})`, {
        cause: err,
        retriable: true,
      });
    }
    const body = (await res.json().catch(() => ({}))) as {
      id_token?: unknown;
      refresh_token?: unknown;
      error?: unknown;
    };
    if (res.status === 429 || res.status >= 500)
      throw new HooklogError('IDP_UNAVAILABLE', `the token endpoint answered ${res.status}`, { retriable: true });
    if (!res.ok || typeof body.id_token !== 'string')
      throw new HooklogError(
        'IDP_AUTH_FAILED',
        `the token endpoint refused the ${grant.grant_type} grant (${res.status} ${String(body.error ?? '').slice(0, 100)})`,
      );
    return {
      idToken: body.id_token,
      ...(typeof body.refresh_token === 'string' ? { refreshToken: body.refresh_token } : {}),
    };
  }

  async #verifyIdToken(idToken: string): Promise<Record<string, unknown>> {
    const { doc, keys } = await this.#discover();
    try {
      const verified = await jwtVerify(idToken, keys, {
        issuer: doc.issuer,
        audience: this.#o.client_id,
        algorithms: ALGORITHMS,
        clockTolerance: this.#o.clock_tolerance_s,
        requiredClaims: ['sub', 'exp', 'iat'],
      });
      // The service's ID tokens carry no typ; one that does must say JWT (not an access token or a proof).
      const typ = verified.protectedHeader.typ;
      if (typ !== undefined && typ.toUpperCase() !== 'JWT') throw new Error(`typ ${typ}`);
      return verified.payload as Record<string, unknown>;
    } catch (err) {
      throw new HooklogError('IDP_AUTH_FAILED', `the ID token did not verify (${(err as Error).message})`, {
        cause: err,
      });
    }
  }

  #principal(payload: Record<string, unknown>): Principal {
    const claim = payload[this.#o.groups_claim];
    const groups = Array.isArray(claim) ? claim.filter((g): g is string => typeof g === 'string') : [];
    const granted = grantsFor(groups, this.#o.grants);
    if (!granted) throw new HooklogError('IDP_AUTH_FAILED', "none of the user's groups may use the console");
    const login = [payload.preferred_username, payload.email, payload.name].find((v) => typeof v === 'string');
    const sub = payload.sub as string;
    return {
      kind: 'user',
      id: sub,
      name: typeof login === 'string' ? login : sub,
      orgs: granted.orgs,
      role: granted.role,
    };
  }
}
