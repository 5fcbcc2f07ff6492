/**
 * The org's OpenID Connect sign-in, as a module (`SimulatedOrg.use(new OidcSignIn(…))`):
 * discovery, `/oauth2/v1/authorize` (authorization code, PKCE S256 required)
 * with a plain HTML login form a browser test fills in, `/oauth2/v1/token`
 * exchanging a code once for an RS256 ID token carrying a `groups` claim, and
 * the key set at `/oauth2/v1/keys`. Strict like the rest of the org: a wrong
 * redirect URI, a missing or wrong PKCE verifier, a reused or expired code are
 * refused, and recorded in `violations` when the client (hooklog) broke a rule.
 *
 * Refresh tokens (RFC 6749 §6, OIDC Core §12): issued only when the
 * authorization asked for `offline_access` and the client may use the
 * refresh_token grant. Every refresh rotates the token; the one it replaced is
 * still accepted for a grace period (ROTATION_GRACE_MS, the service's default),
 * and reusing it after that revokes the whole family (a token thief and its
 * owner cannot both go on). A refresh answers with a new ID token carrying the
 * user's groups as they are now, without a nonce; a user removed from the org
 * (`removeUser`) gets invalid_grant, and a scope beyond the original is refused.
 */
import { createHash, randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { RawReply, SimApi, SimOrg, SimRequest } from './api.js';
import type { Reply } from './auth.js';

export interface SimUser {
  readonly login: string;
  readonly password: string;
  readonly name?: string;
  readonly groups: readonly string[];
}

export interface OidcClientRegistration {
  readonly clientId: string;
  /** Grants the client may use; default both (authorization_code, refresh_token). */
  readonly grantTypes?: ReadonlyArray<'authorization_code' | 'refresh_token'>;
  /** Absent: a public client (PKCE only). */
  readonly clientSecret?: string;
  readonly redirectUris: readonly string[];
}

interface PendingCode {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly challenge: string;
  readonly nonce: string;
  readonly scope: readonly string[];
  readonly user: SimUser;
  readonly expires: number;
}

interface RefreshGrant {
  readonly clientId: string;
  readonly login: string;
  readonly scope: readonly string[];
  /** Tokens of one sign-in share a family: reuse after rotation revokes it all. */
  readonly family: string;
  readonly expires: number;
  /** When a refresh replaced it (it is still accepted for ROTATION_GRACE_MS). */
  rotatedAt?: number;
}

const CODE_TTL_MS = 60_000;
/** How long a rotated refresh token is still accepted (parallel requests of one client). */
export const ROTATION_GRACE_MS = 30_000;
const REFRESH_TTL_MS = 7 * 24 * 3600_000;
const KID = 'sim-oidc-1';

const oauthError = (status: number, error: string, description: string, violation?: string): Reply => ({
  status,
  body: { error, error_description: description },
  ...(violation ? { violation } : {}),
});

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);

export class OidcSignIn implements SimApi {
  readonly name = 'oidc';
  /** ID tokens issued (tests read claims from here); `grant` says by which grant. */
  readonly issued: Array<{
    sub: string;
    aud: string;
    groups: readonly string[];
    grant: 'authorization_code' | 'refresh_token';
  }> = [];
  readonly #clients: readonly OidcClientRegistration[];
  readonly #users: SimUser[];
  readonly #codes = new Map<string, PendingCode>();
  readonly #refresh = new Map<string, RefreshGrant>();
  readonly #revokedFamilies = new Set<string>();
  /** Authorization requests waiting for their login form, by transaction id. */
  readonly #txns = new Map<string, Omit<PendingCode, 'user' | 'expires'> & { state: string }>();
  #keys: Promise<{ privateKey: CryptoKey; jwk: JWK }> | undefined;
  /** Seconds an ID token lives; tests shorten it. */
  idTokenTtlS = 300;
  /** While set, the token endpoint answers this status (an outage: 503) to every request. */
  tokenOutage: number | undefined;

  constructor(clients: readonly OidcClientRegistration[], users: readonly SimUser[]) {
    this.#clients = clients;
    this.#users = [...users];
  }

  addUser(u: SimUser): void {
    this.#users.push(u);
  }

  /** The user's groups from now on (a group membership changed at the identity service). */
  setGroups(login: string, groups: readonly string[]): void {
    const i = this.#users.findIndex((u) => u.login === login);
    if (i < 0) throw new Error(`no user ${login}`);
    this.#users[i] = { ...this.#users[i]!, groups: [...groups] };
  }

  /** Removes the user: their refresh tokens are refused from now on. */
  removeUser(login: string): void {
    const i = this.#users.findIndex((u) => u.login === login);
    if (i >= 0) this.#users.splice(i, 1);
  }

  #signingKey() {
    this.#keys ??= (async () => {
      const { privateKey, publicKey } = await generateKeyPair('RS256');
      return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid: KID, alg: 'RS256', use: 'sig' } };
    })();
    return this.#keys;
  }

  async handle(req: SimRequest, org: SimOrg): Promise<Reply | RawReply | null> {
    const path = req.url.pathname;
    if (path === '/.well-known/openid-configuration' && req.method === 'GET') return this.#discovery(org);
    if (path === '/oauth2/v1/keys' && req.method === 'GET')
      return { status: 200, body: { keys: [(await this.#signingKey()).jwk] } };
    if (path === '/oauth2/v1/authorize' && req.method === 'GET') return this.#authorize(req);
    if (path === '/oauth2/v1/authorize/login' && req.method === 'POST') return this.#login(req);
    if (path === '/oauth2/v1/token' && req.method === 'POST') {
      if (this.tokenOutage !== undefined)
        return { status: this.tokenOutage, body: { error: 'temporarily_unavailable', error_description: 'outage' } };
      return this.#token(req, org);
    }
    return null;
  }

  #discovery(org: SimOrg): Reply {
    return {
      status: 200,
      body: {
        issuer: org.url,
        authorization_endpoint: `${org.url}/oauth2/v1/authorize`,
        token_endpoint: `${org.url}/oauth2/v1/token`,
        jwks_uri: `${org.url}/oauth2/v1/keys`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        scopes_supported: ['openid', 'profile', 'email', 'groups', 'offline_access'],
        token_endpoint_auth_methods_supported: ['client_secret_post', 'none'],
      },
    };
  }

  #authorize(req: SimRequest): Reply | RawReply {
    const q = req.url.searchParams;
    const client = this.#clients.find((c) => c.clientId === q.get('client_id'));
    const redirectUri = q.get('redirect_uri') ?? '';
    // Without a known client and its registered redirect URI nothing may be redirected anywhere.
    if (!client || !client.redirectUris.includes(redirectUri))
      return oauthError(
        400,
        'invalid_request',
        'unknown client or redirect_uri',
        'authorize: unknown client or redirect_uri',
      );
    const missing = ['state', 'nonce', 'code_challenge'].find((k) => !q.get(k));
    if (q.get('response_type') !== 'code' || missing || q.get('code_challenge_method') !== 'S256')
      return oauthError(
        400,
        'invalid_request',
        `code flow with PKCE S256 required (${missing ?? 'method'})`,
        'authorize: not code+PKCE S256',
      );
    if (!(q.get('scope') ?? '').split(' ').includes('openid'))
      return oauthError(400, 'invalid_scope', 'openid is required', 'authorize: no openid scope');
    const txn = randomBytes(16).toString('hex');
    this.#txns.set(txn, {
      clientId: client.clientId,
      redirectUri,
      challenge: q.get('code_challenge')!,
      nonce: q.get('nonce')!,
      scope: (q.get('scope') ?? '').split(' ').filter(Boolean),
      state: q.get('state')!,
    });
    return {
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
      raw: `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body>
<h1>Sign in to the simulated org</h1>
<form method="post" action="/oauth2/v1/authorize/login">
<input type="hidden" name="txn" value="${escapeHtml(txn)}">
<label for="username">Username</label> <input id="username" name="username" autocomplete="username">
<label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password">
<button type="submit" id="sign-in">Sign in</button>
</form></body></html>`,
    };
  }

  #login(req: SimRequest): Reply | RawReply {
    const form = new URLSearchParams(req.body.toString('utf8'));
    const txn = this.#txns.get(form.get('txn') ?? '');
    if (!txn) return oauthError(400, 'invalid_request', 'unknown or used sign-in transaction');
    const user = this.#users.find((u) => u.login === form.get('username') && u.password === form.get('password'));
    if (!user) return { status: 401, headers: { 'content-type': 'text/plain' }, raw: 'Wrong username or password.' };
    this.#txns.delete(form.get('txn')!);
    const code = randomBytes(24).toString('base64url');
    this.#codes.set(code, { ...txn, user, expires: req.now + CODE_TTL_MS });
    const back = new URL(txn.redirectUri);
    back.searchParams.set('code', code);
    back.searchParams.set('state', txn.state);
    return { status: 302, headers: { location: back.toString() }, raw: '' };
  }

  async #token(req: SimRequest, org: SimOrg): Promise<Reply | null> {
    const form = new URLSearchParams(req.body.toString('utf8'));
    if (form.get('grant_type') === 'refresh_token') return this.#refreshGrant(form, req, org);
    if (form.get('grant_type') !== 'authorization_code')
      return oauthError(
        400,
        'unsupported_grant_type',
        'authorization_code or refresh_token',
        'token: unsupported grant',
      );
    const code = form.get('code') ?? '';
    const pending = this.#codes.get(code);
    this.#codes.delete(code); // one use, whatever happens next
    if (!pending || pending.expires < req.now)
      return oauthError(
        400,
        'invalid_grant',
        'the code is unknown, used or expired',
        'token: unknown, reused or expired code',
      );
    const client = this.#clients.find((c) => c.clientId === form.get('client_id'));
    if (!client || client.clientId !== pending.clientId || form.get('redirect_uri') !== pending.redirectUri)
      return oauthError(
        400,
        'invalid_grant',
        'client or redirect_uri differs from the authorization request',
        'token: client/redirect mismatch',
      );
    if (client.clientSecret !== undefined && form.get('client_secret') !== client.clientSecret)
      return oauthError(401, 'invalid_client', 'client authentication failed', 'token: wrong client secret');
    const verifier = form.get('code_verifier') ?? '';
    const challenge = createHash('sha256').update(verifier, 'ascii').digest('base64url');
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || challenge !== pending.challenge)
      return oauthError(400, 'invalid_grant', 'PKCE verification failed', 'token: PKCE verifier does not match');
    const scope = pending.scope;
    const refreshToken =
      scope.includes('offline_access') && this.#mayRefresh(client)
        ? this.#newRefresh(client, pending.user, scope, req.now)
        : undefined;
    return this.#tokens(org, client, pending.user, scope, req.now, 'authorization_code', pending.nonce, refreshToken);
  }

  #mayRefresh(client: OidcClientRegistration): boolean {
    return (client.grantTypes ?? ['authorization_code', 'refresh_token']).includes('refresh_token');
  }

  #newRefresh(
    client: OidcClientRegistration,
    user: SimUser,
    scope: readonly string[],
    now: number,
    family = randomBytes(8).toString('hex'),
  ): string {
    const token = randomBytes(32).toString('base64url');
    this.#refresh.set(token, {
      clientId: client.clientId,
      login: user.login,
      scope,
      family,
      expires: now + REFRESH_TTL_MS,
    });
    return token;
  }

  /** The refresh grant: client authentication as for a code, then the token's own rules. */
  async #refreshGrant(form: URLSearchParams, req: SimRequest, org: SimOrg): Promise<Reply> {
    const client = this.#clients.find((c) => c.clientId === form.get('client_id'));
    if (!client) return oauthError(401, 'invalid_client', 'unknown client', 'token: unknown client');
    if (client.clientSecret !== undefined && form.get('client_secret') !== client.clientSecret)
      return oauthError(401, 'invalid_client', 'client authentication failed', 'token: wrong client secret');
    if (!this.#mayRefresh(client))
      return oauthError(
        400,
        'unauthorized_client',
        'the client may not use refresh_token',
        'token: refresh not allowed',
      );
    const presented = form.get('refresh_token') ?? '';
    const grant = this.#refresh.get(presented);
    if (
      !grant ||
      grant.clientId !== client.clientId ||
      grant.expires < req.now ||
      this.#revokedFamilies.has(grant.family)
    )
      return oauthError(400, 'invalid_grant', 'the refresh token is invalid or expired');
    if (grant.rotatedAt !== undefined && req.now - grant.rotatedAt > ROTATION_GRACE_MS) {
      this.#revokedFamilies.add(grant.family);
      return oauthError(
        400,
        'invalid_grant',
        'the refresh token was already used',
        'token: refresh token reused after its rotation grace period',
      );
    }
    const asked = (form.get('scope') ?? grant.scope.join(' ')).split(' ').filter(Boolean);
    const beyond = asked.find((sc) => !grant.scope.includes(sc));
    if (beyond !== undefined)
      return oauthError(400, 'invalid_scope', `${beyond} was not granted`, 'token: refresh asks for more scope');
    const user = this.#users.find((u) => u.login === grant.login);
    if (!user) return oauthError(400, 'invalid_grant', 'the user is no longer active');
    grant.rotatedAt ??= req.now;
    const next = this.#newRefresh(client, user, grant.scope, req.now, grant.family);
    return this.#tokens(org, client, user, asked, req.now, 'refresh_token', undefined, next);
  }

  async #tokens(
    org: SimOrg,
    client: OidcClientRegistration,
    u: SimUser,
    scope: readonly string[],
    nowMs: number,
    grant: 'authorization_code' | 'refresh_token',
    nonce: string | undefined,
    refreshToken: string | undefined,
  ): Promise<Reply> {
    const { privateKey } = await this.#signingKey();
    const sub = `00u${createHash('sha256').update(u.login).digest('hex').slice(0, 17)}`;
    const now = Math.floor(nowMs / 1000);
    const idToken = await new SignJWT({
      // OIDC Core §12.2: a refreshed ID token carries no nonce.
      ...(nonce !== undefined ? { nonce } : {}),
      preferred_username: u.login,
      email: u.login,
      name: u.name ?? u.login,
      groups: [...u.groups],
    })
      .setProtectedHeader({ alg: 'RS256', kid: KID })
      .setIssuer(org.url)
      .setAudience(client.clientId)
      .setSubject(sub)
      .setIssuedAt(now)
      .setExpirationTime(now + this.idTokenTtlS)
      .sign(privateKey);
    this.issued.push({ sub, aud: client.clientId, groups: u.groups, grant });
    return {
      status: 200,
      headers: { 'cache-control': 'no-store' },
      body: {
        token_type: 'Bearer',
        expires_in: 3600,
        access_token: randomBytes(24).toString('base64url'),
        id_token: idToken,
        scope: scope.join(' '),
        ...(refreshToken !== undefined ? { refresh_token: refreshToken } : {}),
      },
    };
  }
}
