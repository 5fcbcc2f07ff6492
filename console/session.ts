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
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
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
}

export interface LoginState {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly returnTo: string;
}

export class SessionKeys {
  readonly #key: Uint8Array;
  readonly #secret: string;
  readonly #ttlS: number;

  constructor(secret: string, ttlMinutes: number) {
    this.#secret = secret;
    this.#key = new TextEncoder().encode(secret);
    this.#ttlS = ttlMinutes * 60;
  }

  async issue(p: Principal, nowMs: number): Promise<{ token: string; session: Session }> {
    const sid = randomBytes(16).toString('hex');
    const iat = Math.floor(nowMs / 1000);
    const token = await new SignJWT({ name: p.name, orgs: p.orgs, role: p.role, sid })
      .setProtectedHeader({ alg: ALG, typ: SESSION_TYP })
      .setSubject(p.id)
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.#ttlS)
      .sign(this.#key);
    return { token, session: { principal: p, sid, expiresAt: iat + this.#ttlS } };
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
      const { name, orgs, role, sid } = payload as Record<string, unknown>;
      if (typeof name !== 'string' || typeof sid !== 'string' || !ROLES.includes(role as Role)) return undefined;
      if (orgs !== 'all' && !(Array.isArray(orgs) && orgs.every((o) => typeof o === 'string'))) return undefined;
      return {
        principal: { kind: 'user', id: payload.sub!, name, orgs: orgs as Principal['orgs'], role: role as Role },
        sid,
        expiresAt: payload.exp!,
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
