/**
 * Console sessions: a signed token (jose, HS256 with `console.session_secret`,
 * loaded once) in an HttpOnly, Secure, SameSite=Lax cookie. Stateless, so any
 * instance of a fleet configured with the same secret accepts it, and it ends
 * by its own `exp` (`session_ttl_minutes`). The sign-in's transient state
 * (OIDC state, nonce, PKCE verifier, where to return) rides in a second signed
 * cookie scoped to the callback path, for ten minutes.
 *
 * CSRF: every change must carry `x-csrf-token`, an HMAC of the session's id
 * under the same secret (so it is bound to this session and cannot be made
 * without the secret), compared in constant time; the cookie's SameSite=Lax
 * and the Origin check (routes) are the second and third walls.
 *
 * Regrant: the session also carries when its groups were last granted (`gat`)
 * and the identity service's refresh token, encrypted (JWE, A256GCM under a
 * key derived from the secret: the cookie is the user's, the token is not for
 * them to read), so any instance can re-check the groups (auth.ts). A
 * re-issued session keeps its id, its sign-in time and its expiry.
 */
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { CompactEncrypt, SignJWT, compactDecrypt, jwtVerify } from 'jose';
import { ROLES, type Principal, type Role } from '../platform/access.js';

export const SESSION_COOKIE = 'hooklog_session';
export const LOGIN_COOKIE = 'hooklog_login';
const SESSION_TYP = 'hooklog-session+jwt';
const LOGIN_TYP = 'hooklog-login+jwt';
const ALG = 'HS256';
const LOGIN_TTL_S = 600;

export interface Session {
  readonly principal: Principal;
  readonly sid: string;
  /** Epoch seconds. */
  readonly expiresAt: number;
  /** When the user signed in (epoch ms): kept across regrants, compared with user revocations. */
  readonly signedInAtMs: number;
  /** When the identity service last granted the groups (epoch ms). */
  readonly grantedAtMs: number;
  /** The refresh token, encrypted (`openRefreshToken`); absent when the identity service gave none. */
  readonly sealedRefreshToken?: string;
}

export interface LoginState {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly returnTo: string;
}

export class SessionKeys {
  readonly #key: Uint8Array;
  readonly #sealKey: Uint8Array;
  readonly #secret: string;
  readonly #ttlS: number;

  constructor(secret: string, ttlMinutes: number) {
    this.#secret = secret;
    this.#key = new TextEncoder().encode(secret);
    this.#sealKey = new Uint8Array(hkdfSync('sha256', secret, 'hooklog-console', 'refresh-token', 32));
    this.#ttlS = ttlMinutes * 60;
  }

  /** A new session for `p`, signed in now. */
  async issue(p: Principal, nowMs: number, refreshToken?: string): Promise<{ token: string; session: Session }> {
    const iat = Math.floor(nowMs / 1000);
    return this.#sign(
      p,
      { sid: randomBytes(16).toString('hex'), expiresAt: iat + this.#ttlS, signedInAtMs: nowMs },
      nowMs,
      refreshToken,
    );
  }

  /** The same session (id, sign-in time, expiry) with the principal and refresh token of a regrant at `nowMs`. */
  async reissue(
    s: Session,
    p: Principal,
    nowMs: number,
    refreshToken?: string,
  ): Promise<{ token: string; session: Session }> {
    return this.#sign(p, s, nowMs, refreshToken);
  }

  async #sign(
    p: Principal,
    s: Pick<Session, 'sid' | 'expiresAt' | 'signedInAtMs'>,
    nowMs: number,
    refreshToken: string | undefined,
  ): Promise<{ token: string; session: Session }> {
    const sealed = refreshToken
      ? await new CompactEncrypt(new TextEncoder().encode(refreshToken))
          .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
          .encrypt(this.#sealKey)
      : undefined;
    const token = await new SignJWT({
      name: p.name,
      orgs: p.orgs,
      role: p.role,
      sid: s.sid,
      sat: s.signedInAtMs,
      gat: nowMs,
      ...(sealed ? { rt: sealed } : {}),
    })
      .setProtectedHeader({ alg: ALG, typ: SESSION_TYP })
      .setSubject(p.id)
      .setIssuedAt(Math.floor(nowMs / 1000))
      .setExpirationTime(s.expiresAt)
      .sign(this.#key);
    return {
      token,
      session: {
        principal: p,
        sid: s.sid,
        expiresAt: s.expiresAt,
        signedInAtMs: s.signedInAtMs,
        grantedAtMs: nowMs,
        ...(sealed ? { sealedRefreshToken: sealed } : {}),
      },
    };
  }

  /** The refresh token a session carries, or undefined (none, or not sealed by this secret). */
  async openRefreshToken(s: Session): Promise<string | undefined> {
    if (!s.sealedRefreshToken) return undefined;
    try {
      const { plaintext } = await compactDecrypt(s.sealedRefreshToken, this.#sealKey, {
        keyManagementAlgorithms: ['dir'],
        contentEncryptionAlgorithms: ['A256GCM'],
      });
      return new TextDecoder().decode(plaintext);
    } catch {
      return undefined;
    }
  }

  /** The session a cookie value holds, or undefined when it is missing, forged, malformed or expired. */
  async verify(token: string | undefined, nowMs: number): Promise<Session | undefined> {
    if (!token) return undefined;
    try {
      const { payload } = await jwtVerify(token, this.#key, {
        algorithms: [ALG],
        typ: SESSION_TYP,
        currentDate: new Date(nowMs),
        requiredClaims: ['sub', 'exp', 'iat'],
      });
      const { name, orgs, role, sid, sat, gat, rt } = payload as Record<string, unknown>;
      if (typeof name !== 'string' || typeof sid !== 'string' || !ROLES.includes(role as Role)) return undefined;
      if (orgs !== 'all' && !(Array.isArray(orgs) && orgs.every((o) => typeof o === 'string'))) return undefined;
      // A session from before regrants carried none of these: it began (and was granted) at its iat.
      const issuedMs = payload.iat! * 1000;
      return {
        principal: { kind: 'user', id: payload.sub!, name, orgs: orgs as Principal['orgs'], role: role as Role },
        sid,
        expiresAt: payload.exp!,
        signedInAtMs: Number.isSafeInteger(sat) ? (sat as number) : issuedMs,
        grantedAtMs: Number.isSafeInteger(gat) ? (gat as number) : issuedMs,
        ...(typeof rt === 'string' ? { sealedRefreshToken: rt } : {}),
      };
    } catch {
      return undefined;
    }
  }

  /** The CSRF token of a session: HMAC-SHA256 of its id under the secret. */
  csrfToken(session: Session): string {
    return createHmac('sha256', this.#secret).update(`csrf\n${session.sid}`).digest('base64url');
  }

  csrfMatches(session: Session, presented: string | undefined): boolean {
    if (!presented) return false;
    const want = Buffer.from(this.csrfToken(session));
    const got = Buffer.from(presented);
    return got.length === want.length && timingSafeEqual(got, want);
  }

  async issueLogin(state: LoginState, nowMs: number): Promise<string> {
    const iat = Math.floor(nowMs / 1000);
    return new SignJWT({ ...state })
      .setProtectedHeader({ alg: ALG, typ: LOGIN_TYP })
      .setIssuedAt(iat)
      .setExpirationTime(iat + LOGIN_TTL_S)
      .sign(this.#key);
  }

  async verifyLogin(token: string | undefined, nowMs: number): Promise<LoginState | undefined> {
    if (!token) return undefined;
    try {
      const { payload } = await jwtVerify(token, this.#key, {
        algorithms: [ALG],
        typ: LOGIN_TYP,
        currentDate: new Date(nowMs),
      });
      const { state, nonce, verifier, returnTo } = payload as Record<string, unknown>;
      if ([state, nonce, verifier, returnTo].some((v) => typeof v !== 'string')) return undefined;
      return { state, nonce, verifier, returnTo } as LoginState;
    } catch {
      return undefined;
    }
  }

  get ttlS(): number {
    return this.#ttlS;
  }

  get loginTtlS(): number {
    return LOGIN_TTL_S;
  }
}
