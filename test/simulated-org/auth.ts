/**
 * The simulated org's authentication: SSWS API tokens, and an org
 * authorization server issuing access tokens to service apps by client
 * credentials with private_key_jwt (the only method for okta.* scopes),
 * optionally DPoP-bound with nonces. Strict like the real one: a wrong
 * audience, a reused jti, an assertion living over an hour, an unknown kid,
 * a missing scope or an expired token are all refused.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  importJWK,
  jwtVerify,
  type JWK,
} from 'jose';

export interface SimulatedClient {
  readonly clientId: string;
  /** Public keys registered with the app. */
  readonly jwks: readonly JWK[];
  readonly scopes: readonly string[];
  /** Tokens are DPoP-bound; token requests must carry a proof. */
  readonly dpop?: boolean;
  /** Demand a server nonce in proofs (token endpoint and resource). */
  readonly requireNonce?: boolean;
}

export interface AuthOptions {
  readonly ssws?: readonly string[];
  /**
   * SSWS tokens of admins whose role grants only these scopes (a read-only admin's token); a token not
   * listed here may do everything. Requests needing another scope get 403 E0000006.
   */
  readonly sswsScopes?: Readonly<Record<string, readonly string[]>>;
  readonly clients?: readonly SimulatedClient[];
  readonly tokenLifetimeS?: number;
}

export interface Reply {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Record<string, string>;
  /** Set when hooklog broke a rule (not for the nonce dance). */
  readonly violation?: string;
}

interface IssuedToken {
  readonly clientId: string;
  readonly scopes: readonly string[];
  readonly expiresAtMs: number;
  readonly jkt: string | null;
}

const ALGS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512'];
const oauthError = (status: number, error: string, description: string, extra: Partial<Reply> = {}): Reply => ({
  status,
  body: { error, error_description: description },
  ...extra,
});
const oktaError = (status: number, errorCode: string, errorSummary: string, extra: Partial<Reply> = {}): Reply => ({
  status,
  body: {
    errorCode,
    errorSummary,
    errorLink: errorCode,
    errorId: `sim${randomBytes(6).toString('hex')}`,
    errorCauses: [],
  },
  ...extra,
});

export class AuthServer {
  readonly #o: AuthOptions;
  readonly #now: () => number;
  readonly #tokens = new Map<string, IssuedToken>();
  readonly #jtis = new Set<string>();
  #nonce = randomBytes(12).toString('base64url');
  readonly stats = {
    tokenRequests: 0,
    tokensIssued: 0,
    assertionsRefused: 0,
    nonceChallenges: 0,
    usesByToken: new Map<string, number>(),
  };

  constructor(opts: AuthOptions, now: () => number) {
    this.#o = opts;
    this.#now = now;
  }

  /** Invalidate the current nonce (servers rotate them). */
  rotateNonce(): void {
    this.#nonce = randomBytes(12).toString('base64url');
  }

  /** Forget every issued token, as a revocation would. */
  revokeAll(): void {
    this.#tokens.clear();
  }

  /** POST /oauth2/v1/token */
  async token(form: URLSearchParams, dpopProof: string | undefined, tokenUrl: string): Promise<Reply> {
    this.stats.tokenRequests++;
    if (form.get('grant_type') !== 'client_credentials')
      return oauthError(400, 'unsupported_grant_type', 'only client_credentials', { violation: 'grant_type' });
    if (form.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') {
      return oauthError(
        401,
        'invalid_client',
        'client_assertion_type must be jwt-bearer (private_key_jwt is required for okta.* scopes)',
        { violation: 'assertion type' },
      );
    }
    const assertion = form.get('client_assertion') ?? '';
    let clientId: string;
    try {
      clientId = String(decodeJwt(assertion).iss ?? '');
    } catch {
      this.stats.assertionsRefused++;
      return oauthError(401, 'invalid_client', 'The client_assertion is not a JWT.');
    }
    const client = this.#o.clients?.find((c) => c.clientId === clientId);
    if (!client) {
      this.stats.assertionsRefused++;
      return oauthError(401, 'invalid_client', 'The client_id is unknown.');
    }
    const nowS = Math.floor(this.#now() / 1000);
    try {
      const { payload } = await jwtVerify(assertion, createLocalJWKSet({ keys: [...client.jwks] }), {
        issuer: clientId,
        subject: clientId,
        audience: tokenUrl,
        algorithms: ALGS,
        currentDate: new Date(this.#now()),
      });
      if (typeof payload.exp !== 'number' || payload.exp - nowS > 3600)
        throw new Error('exp must be at most one hour ahead');
      if (typeof payload.jti !== 'string' || this.#jtis.has(payload.jti))
        throw new Error('jti missing or already used');
      this.#jtis.add(payload.jti);
    } catch (err) {
      this.stats.assertionsRefused++;
      return oauthError(
        401,
        'invalid_client',
        `The client_assertion signature or claims are invalid: ${(err as Error).message}`,
      );
    }
    const scopes = (form.get('scope') ?? '').split(' ').filter(Boolean);
    if (scopes.length === 0 || !scopes.every((s) => client.scopes.includes(s))) {
      return oauthError(
        400,
        'invalid_scope',
        'The requested scope is invalid, unknown, or not granted to the client.',
        { violation: 'scope not granted' },
      );
    }
    let jkt: string | null = null;
    if (client.dpop) {
      if (!dpopProof)
        return oauthError(400, 'invalid_dpop_proof', 'DPoP proof required', { violation: 'no DPoP proof' });
      const checked = await this.#verifyProof(dpopProof, 'POST', tokenUrl, null, client.requireNonce ?? false);
      if (typeof checked !== 'string')
        return checked.nonce
          ? this.#nonceChallenge(400)
          : oauthError(400, 'invalid_dpop_proof', checked.why, { violation: checked.why });
      jkt = checked;
    }
    const value = randomBytes(24).toString('base64url');
    const lifetime = this.#o.tokenLifetimeS ?? 3600;
    this.#tokens.set(value, { clientId, scopes, expiresAtMs: this.#now() + lifetime * 1000, jkt });
    this.stats.tokensIssued++;
    return {
      status: 200,
      body: { token_type: jkt ? 'DPoP' : 'Bearer', expires_in: lifetime, access_token: value, scope: scopes.join(' ') },
    };
  }

  /** Checks a resource request's credentials for `scope`. Null when they pass. */
  async authenticate(
    authorization: string | undefined,
    dpopProof: string | undefined,
    method: string,
    url: string,
    scope: string,
  ): Promise<Reply | null> {
    const [scheme, value] = (authorization ?? '').split(' ', 2);
    if (scheme === 'SSWS') {
      if (value && this.#o.ssws?.includes(value)) {
        const granted =
          this.#o.sswsScopes && Object.hasOwn(this.#o.sswsScopes, value) ? this.#o.sswsScopes[value] : null;
        if (granted && !granted.includes(scope))
          return oktaError(403, 'E0000006', 'You do not have permission to perform the requested action', {
            violation: `scope ${scope} missing`,
          });
        return null;
      }
      return oktaError(401, 'E0000011', 'Invalid token provided', { violation: 'invalid SSWS token' });
    }
    if ((scheme !== 'Bearer' && scheme !== 'DPoP') || !value)
      return oktaError(401, 'E0000011', 'Invalid token provided', { violation: 'no credentials' });
    const token = this.#tokens.get(value);
    if (!token)
      return oktaError(401, 'E0000011', 'Invalid token provided', { violation: 'unknown or revoked access token' });
    this.stats.usesByToken.set(value, (this.stats.usesByToken.get(value) ?? 0) + 1);
    if (this.#now() >= token.expiresAtMs)
      return oktaError(401, 'E0000011', 'Invalid token provided', { violation: 'expired access token used' });
    if (!token.scopes.includes(scope))
      return oktaError(403, 'E0000006', 'You do not have permission to perform the requested action', {
        violation: `scope ${scope} missing`,
      });
    if (token.jkt) {
      if (scheme !== 'DPoP' || !dpopProof)
        return oktaError(401, 'E0000011', 'DPoP-bound token used without a proof', {
          violation: 'DPoP token without proof',
        });
      const client = this.#o.clients?.find((c) => c.clientId === token.clientId);
      const checked = await this.#verifyProof(dpopProof, method, url, value, client?.requireNonce ?? false);
      if (typeof checked !== 'string')
        return checked.nonce
          ? this.#nonceChallenge(401)
          : oktaError(401, 'E0000011', checked.why, { violation: checked.why });
      if (checked !== token.jkt)
        return oktaError(401, 'E0000011', 'DPoP key does not match the token', { violation: 'DPoP key mismatch' });
    } else if (scheme !== 'Bearer') {
      return oktaError(401, 'E0000011', 'Bearer token sent with the DPoP scheme', { violation: 'scheme mismatch' });
    }
    return null;
  }

  #nonceChallenge(status: 400 | 401): Reply {
    this.stats.nonceChallenges++;
    const headers = {
      'dpop-nonce': this.#nonce,
      ...(status === 401
        ? {
            'www-authenticate':
              'DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof"',
          }
        : {}),
    };
    return status === 400
      ? oauthError(400, 'use_dpop_nonce', 'Authorization server requires nonce in DPoP proof.', { headers })
      : oktaError(401, 'E0000011', 'nonce required', { headers });
  }

  /** The proof's key thumbprint, or what is wrong with it. */
  async #verifyProof(
    proof: string,
    htm: string,
    url: string,
    accessToken: string | null,
    requireNonce: boolean,
  ): Promise<string | { why: string; nonce?: true }> {
    try {
      const header = decodeProtectedHeader(proof);
      if (header.typ !== 'dpop+jwt' || !header.jwk || typeof header.alg !== 'string' || 'd' in header.jwk)
        return { why: 'DPoP proof header invalid' };
      const key = await importJWK(header.jwk, header.alg);
      const { payload } = await jwtVerify(proof, key, {
        typ: 'dpop+jwt',
        algorithms: ALGS,
        currentDate: new Date(this.#now()),
      });
      const htu = new URL(url);
      htu.search = '';
      if (payload.htm !== htm || payload.htu !== htu.toString())
        return { why: `DPoP htm/htu mismatch (${String(payload.htm)} ${String(payload.htu)})` };
      if (typeof payload.iat !== 'number' || Math.abs(payload.iat - this.#now() / 1000) > 60)
        return { why: 'DPoP iat out of range' };
      if (typeof payload.jti !== 'string' || this.#jtis.has(`dpop:${payload.jti}`))
        return { why: 'DPoP jti missing or reused' };
      if (accessToken !== null && payload.ath !== createHash('sha256').update(accessToken).digest('base64url'))
        return { why: 'DPoP ath mismatch' };
      if (requireNonce && payload.nonce !== this.#nonce) return { why: 'nonce', nonce: true };
      this.#jtis.add(`dpop:${payload.jti}`);
      return await calculateJwkThumbprint(header.jwk);
    } catch (err) {
      return { why: `DPoP proof invalid: ${(err as Error).message}` };
    }
  }
}

export { oktaError };
