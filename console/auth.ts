/**
 * Who is asking: a console session (cookie) or an API key (bearer), and the
 * checks a change must pass (CSRF token bound to the session, the Origin).
 * Every console route asks `principalOf` first; what the principal may see is
 * decided by platform/access.ts alone.
 *
 * A session holds only while no revocation on the stream ends it (sign-out,
 * `hooklog console revoke`, a removed grant: revocations.ts), and while its
 * groups were granted by the identity service less than `regrant_minutes` ago:
 * past that the request re-checks them with the refresh token first, and a
 * grant that is gone ends the session on every instance.
 */
import type { Context } from 'koa';
import { bearerToken, type ApiKeyring, type Principal } from '../platform/access.js';
import { HooklogError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import { clearCookie, readCookie, setCookie } from './http.js';
import type { Granted } from './oidc.js';
import { recordRefusal } from './refusals.js';
import type { RevocationReason, RevocationView } from './revocations.js';
import { SESSION_COOKIE, type Session, type SessionKeys } from './session.js';

export interface Authenticated {
  readonly principal: Principal;
  /** Set for a browser session (cookie), absent for an API key. */
  readonly session?: Session;
}

export interface AuthDeps {
  readonly sessions: SessionKeys;
  readonly keys: ApiKeyring;
  readonly publicUrl: string;
  readonly now: () => number;
  readonly revocations: RevocationView;
  readonly regrantMs: number;
  /** The identity service's refresh grant (OidcClient.regrant). */
  readonly regrant: (refreshToken: string, sub: string) => Promise<Granted>;
  /** Appends a session's revocation to the stream (every instance then refuses it). */
  readonly revoke: (s: Session, reason: RevocationReason) => Promise<void>;
  readonly log: Logger;
}

type Regranted = { token: string; session: Session } | { ended: 'grant_removed' | 'no_refresh_token'; why: string };

/** How long a regrant's outcome answers other requests carrying the same cookie (parallel page loads). */
const REGRANT_REUSE_MS = 30_000;

export class ConsoleAuth {
  readonly #d: AuthDeps;
  readonly #origin: string;
  /** Regrants in flight or just done, by session id and grant time: one request to the identity service each. */
  readonly #regrants = new Map<string, Promise<Regranted>>();

  constructor(d: AuthDeps) {
    this.#d = d;
    this.#origin = new URL(d.publicUrl).origin;
  }

  get sessions(): SessionKeys {
    return this.#d.sessions;
  }

  /**
   * The principal of the request, from its bearer key (API) or its session
   * cookie; undefined when there is none that holds (a revoked session or a
   * removed grant is logged and counted as a refusal). `regrant: false` (sign-out)
   * takes the session as it is. Throws IDP_UNAVAILABLE (retriable) when the
   * groups are due for a re-check and the identity service cannot answer.
   */
  async principalOf(
    ctx: Context,
    allowKeys: boolean,
    opts: { regrant?: boolean } = {},
  ): Promise<Authenticated | undefined> {
    const header = ctx.get('authorization');
    if (header) {
      if (!allowKeys) return undefined;
      const p = this.#d.keys.principalFor(bearerToken(header));
      // A key that is none of ours (a guess, a key since removed) leaves a trace as the query API's does.
      if (!p) recordRefusal(this.#d.log, ctx, undefined, 'wrong_key');
      return p ? { principal: p } : undefined;
    }
    const now = this.#d.now();
    const session = await this.#d.sessions.verify(readCookie(ctx, SESSION_COOKIE), now);
    if (!session) return undefined;
    // Fail closed: a session is not taken before this process knows the revocations in force.
    if (!this.#d.revocations.current)
      throw new HooklogError('STREAM_UNAVAILABLE', 'the session revocations are not read yet', { retriable: true });
    const revoked = this.#d.revocations.revokedBy(session, now);
    if (revoked) {
      recordRefusal(this.#d.log, ctx, session.principal, 'revoked_session', { why: revoked });
      clearCookie(ctx, SESSION_COOKIE, '/console');
      return undefined;
    }
    if (opts.regrant === false || now - session.grantedAtMs < this.#d.regrantMs)
      return { principal: session.principal, session };
    const key = `${session.sid}/${session.grantedAtMs}`;
    let pending = this.#regrants.get(key);
    if (!pending) {
      pending = this.#regrant(session);
      this.#regrants.set(key, pending);
      const forget = () => setTimeout(() => this.#regrants.delete(key), REGRANT_REUSE_MS).unref();
      pending.then(forget, () => this.#regrants.delete(key));
    }
    const outcome = await pending;
    if ('ended' in outcome) {
      clearCookie(ctx, SESSION_COOKIE, '/console');
      if (outcome.ended === 'grant_removed')
        recordRefusal(this.#d.log, ctx, session.principal, 'grant_removed', { why: outcome.why });
      else this.#d.log.info({ user: session.principal.id }, 'console_regrant_needs_sign_in');
      return undefined;
    }
    setCookie(ctx, SESSION_COOKIE, outcome.token, {
      path: '/console',
      maxAgeS: Math.max(0, outcome.session.expiresAt - Math.floor(now / 1000)),
      sameSite: 'Lax',
    });
    return { principal: outcome.session.principal, session: outcome.session };
  }

  async #regrant(s: Session): Promise<Regranted> {
    const refreshToken = await this.#d.sessions.openRefreshToken(s);
    if (!refreshToken) return { ended: 'no_refresh_token', why: 'the session holds no refresh token' };
    let granted: Granted;
    try {
      granted = await this.#d.regrant(refreshToken, s.principal.id);
    } catch (err) {
      if (!(err instanceof HooklogError) || err.code !== 'IDP_AUTH_FAILED') throw err;
      // The identity service no longer grants this session: it ends here and on every other instance.
      await this.#d
        .revoke(s, 'grant_removed')
        .catch((e: unknown) => this.#d.log.error({ err: e, user: s.principal.id }, 'console_revocation_not_recorded'));
      return { ended: 'grant_removed', why: err.message };
    }
    const was = s.principal;
    const p = granted.principal;
    if (p.role !== was.role || JSON.stringify(p.orgs) !== JSON.stringify(was.orgs))
      this.#d.log.info(
        { user: p.id, role: p.role, orgs: p.orgs, was_role: was.role, was_orgs: was.orgs },
        'console_regrant_changed',
      );
    return this.#d.sessions.reissue(s, p, this.#d.now(), granted.refreshToken);
  }

  /**
   * Why a change may not go ahead, or undefined. A cookie session must send its
   * CSRF token, and a browser's Origin (sent on every POST) must be the
   * console's. A bearer key is not sent by browsers on their own, so it needs neither.
   * A refusal is logged and counted (csrf).
   */
  refuseChange(ctx: Context, who: Authenticated): string | undefined {
    if (!who.session) return undefined;
    const origin = ctx.get('origin');
    let refusal: string | undefined;
    if (origin && origin !== this.#origin) refusal = 'cross-origin request refused';
    else if (!this.#d.sessions.csrfMatches(who.session, ctx.get('x-csrf-token') || undefined))
      refusal = 'missing or wrong CSRF token (send x-csrf-token from /console/api/me)';
    if (refusal) recordRefusal(this.#d.log, ctx, who.principal, 'csrf', { why: refusal });
    return refusal;
  }

  /** Logs and counts a refusal of this request (routes: other_org, viewer_change). */
  refused(ctx: Context, who: Authenticated, reason: 'other_org' | 'viewer_change', org?: string): void {
    recordRefusal(this.#d.log, ctx, who.principal, reason, org === undefined ? {} : { org });
  }
}
