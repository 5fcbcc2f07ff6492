/**
 * OAuth 2.0 client credentials with private_key_jwt — the only method the
 * service allows for `okta.*` scopes. A signed client assertion (iss = sub =
 * client id, aud = the token endpoint, exp at most an hour ahead, fresh jti)
 * buys an access token for an hour; it is reused until shortly before it
 * expires, fetched by one caller at a time, and renewed early when a 401 says
 * the service no longer takes it.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { HooklogError, isRetriable } from '../errors.js';
import type { Authenticator } from './auth.js';
import { DpopProver, wantsNonce } from './dpop.js';
import { classifyIdpReply, classifyNetworkError, describeErrorBody, parseErrorBody } from './errors.js';
import type { SigningKey } from './keys.js';
import type { HeaderSource } from './rate-limit.js';

export interface OAuthOptions {
  /** Names the org in error messages. */
  readonly org: string;
  /** `https://{org}/oauth2/v1/token`. */
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly key: SigningKey;
  /** `okta.logs.read`, `okta.events.read`. */
  readonly scopes: readonly string[];
  /** Bind tokens to a DPoP key. */
  readonly dpop: DpopProver | null;
  readonly timeoutMs: number;
  /** Lifetime of each client assertion; the service allows at most an hour. Default 300 s. */
  readonly assertionLifetimeS?: number;
  readonly now?: () => number;
  /** Told about every token obtained (telemetry). */
  readonly onToken?: (info: { renewal: boolean; expiresInS: number; type: string }) => void;
}

interface CachedToken {
  readonly value: string;
  readonly type: 'Bearer' | 'DPoP';
  readonly expiresAtMs: number;
  readonly renewAtMs: number;
}

/** Renew this long before expiry: a minute for the service's hour-long tokens, a tenth for short ones. */
export function renewMarginMs(lifetimeMs: number): number {
  return Math.min(60_000, Math.floor(lifetimeMs / 10));
}

export class OAuthAuthenticator implements Authenticator {
  readonly kind = 'oauth' as const;
  readonly #o: OAuthOptions;
  readonly #now: () => number;
  #token: CachedToken | null = null;
  #pending: Promise<CachedToken> | null = null;
  /** 401s since the last success: one renewal is worth trying, a second 401 is the answer. */
  #refusals = 0;
  /** Tokens obtained so far (tests and telemetry). */
  fetches = 0;

  constructor(opts: OAuthOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
  }

  async headers(method: string, url: string, signal?: AbortSignal): Promise<Record<string, string>> {
    const t = await this.token(signal);
    if (t.type === 'DPoP') {
      return { authorization: `DPoP ${t.value}`, dpop: await this.#o.dpop!.proof(method, url, 'resource', t.value) };
    }
    return { authorization: `Bearer ${t.value}` };
  }

  /** The cached token, or a new one when it is due for renewal (one fetch at a time). */
  async token(signal?: AbortSignal): Promise<CachedToken> {
    const cached = this.#token;
    if (cached && this.#now() < cached.renewAtMs) return cached;
    this.#pending ??= this.#fetch(signal).finally(() => (this.#pending = null));
    try {
      return await this.#pending;
    } catch (err) {
      // A renewal that failed for a passing reason: the old token still works until it expires.
      if (cached && isRetriable(err) && this.#now() < cached.expiresAtMs - 5_000) return cached;
      throw err;
    }
  }

  observe(headers: HeaderSource, ok: boolean): void {
    this.#o.dpop?.setNonce('resource', headers.get('dpop-nonce'));
    if (ok) this.#refusals = 0;
  }

  unauthorized(headers: HeaderSource, bodyText: string): boolean {
    this.#refusals++;
    if (this.#o.dpop && wantsNonce(bodyText, headers.get('www-authenticate'))) {
      this.#o.dpop.setNonce('resource', headers.get('dpop-nonce'));
      return this.#refusals <= 2;
    }
    this.#token = null;
    return this.#refusals <= 1;
  }

  async #assertion(): Promise<string> {
    const { clientId, tokenUrl, key } = this.#o;
    const iat = Math.floor(this.#now() / 1000);
    return new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(tokenUrl)
      .setIssuedAt(iat)
      .setExpirationTime(iat + (this.#o.assertionLifetimeS ?? 300))
      .sign(key.key);
  }

  async #fetch(signal?: AbortSignal): Promise<CachedToken> {
    const { tokenUrl, dpop, timeoutMs } = this.#o;
    const what = `org ${this.#o.org}: POST ${new URL(tokenUrl).pathname}`;
    // A nonce demand is answered at once, at most twice; each try gets a fresh assertion (its jti is single-use).
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      };
      if (dpop) headers.dpop = await dpop.proof('POST', tokenUrl, 'token');
      const body = new URLSearchParams({
        grant_type: 'client_credentials',
        scope: this.#o.scopes.join(' '),
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: await this.#assertion(),
      });
      let status: number;
      let text: string;
      let replyHeaders: Headers;
      try {
        const timeout = AbortSignal.timeout(timeoutMs);
        const res = await fetch(tokenUrl, {
          method: 'POST',
          headers,
          body,
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        text = await res.text();
        status = res.status;
        replyHeaders = res.headers;
      } catch (err) {
        throw classifyNetworkError(err, what, timeoutMs);
      }
      dpop?.setNonce('token', replyHeaders.get('dpop-nonce'));
      if (status === 200) return this.#accept(text, what);
      if (dpop && status === 400 && wantsNonce(text, null) && attempt < 2) continue;
      throw this.#refused(status, text, what);
    }
  }

  #accept(text: string, what: string): CachedToken {
    const body = parseErrorBody(text) as Record<string, unknown>;
    const value = body.access_token;
    const type = typeof body.token_type === 'string' ? body.token_type.toLowerCase() : '';
    const expiresIn = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600;
    if (typeof value !== 'string' || value === '' || (type !== 'bearer' && type !== 'dpop')) {
      throw new HooklogError('IDP_UNAVAILABLE', `${what}: the token reply has no usable access_token/token_type`, {
        retriable: true,
      });
    }
    if (type === 'dpop' && !this.#o.dpop)
      throw new HooklogError(
        'IDP_AUTH_FAILED',
        `${what}: the service issued a DPoP-bound token; set auth.oauth.dpop: true for this org`,
      );
    const now = this.#now();
    const lifetimeMs = expiresIn * 1000;
    const renewal = this.fetches > 0;
    this.fetches++;
    this.#token = {
      value,
      type: type === 'dpop' ? 'DPoP' : 'Bearer',
      expiresAtMs: now + lifetimeMs,
      renewAtMs: now + lifetimeMs - renewMarginMs(lifetimeMs),
    };
    this.#o.onToken?.({ renewal, expiresInS: expiresIn, type: this.#token.type });
    return this.#token;
  }

  #refused(status: number, text: string, what: string): HooklogError {
    const body = parseErrorBody(text);
    const detail = describeErrorBody(body);
    const { clientId, key, scopes } = this.#o;
    if (body.error === 'invalid_client' || status === 401) {
      return new HooklogError(
        'IDP_AUTH_FAILED',
        `${what}: the service refused the client assertion (${status} ${detail}). Check that client_id "${clientId}" is the service app's ` +
          `and that its public keys include kid "${key.kid}" matching the configured private key (signed ${key.alg}).`,
      );
    }
    if (
      body.error === 'invalid_scope' ||
      body.error === 'unauthorized_client' ||
      body.error === 'invalid_dpop_proof' ||
      body.error === 'use_dpop_nonce'
    ) {
      return new HooklogError(
        'IDP_AUTH_FAILED',
        `${what}: token request refused (${status} ${detail}); grant the service app the scopes ${scopes.join(', ')}${this.#o.dpop ? ' and check its DPoP setting' : ''}.`,
      );
    }
    return classifyIdpReply(status, text, what);
  }
}
