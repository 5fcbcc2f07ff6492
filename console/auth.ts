/**
 * Who is asking: a console session (cookie) or an API key (bearer), and the
 * checks a change must pass (CSRF token bound to the session, the Origin).
 * Every console route asks `principalOf` first; what the principal may see is
 * decided by platform/access.ts alone.
 */
import type { Context } from 'koa';
import { bearerToken, type ApiKeyring, type Principal } from '../platform/access.js';
import { readCookie } from './http.js';
import { SESSION_COOKIE, type Session, type SessionKeys } from './session.js';

export interface Authenticated {
  readonly principal: Principal;
  /** Set for a browser session (cookie), absent for an API key. */
  readonly session?: Session;
}

export class ConsoleAuth {
  readonly #sessions: SessionKeys;
  readonly #keys: ApiKeyring;
  readonly #origin: string;
  readonly #now: () => number;

  constructor(sessions: SessionKeys, keys: ApiKeyring, publicUrl: string, now: () => number) {
    this.#sessions = sessions;
    this.#keys = keys;
    this.#origin = new URL(publicUrl).origin;
    this.#now = now;
  }

  get sessions(): SessionKeys {
    return this.#sessions;
  }

  /** The principal of the request, from its bearer key (API) or its session cookie. */
  async principalOf(ctx: Context, allowKeys: boolean): Promise<Authenticated | undefined> {
    const header = ctx.get('authorization');
    if (header) {
      if (!allowKeys) return undefined;
      const p = this.#keys.principalFor(bearerToken(header));
      return p ? { principal: p } : undefined;
    }
    const session = await this.#sessions.verify(readCookie(ctx, SESSION_COOKIE), this.#now());
    return session ? { principal: session.principal, session } : undefined;
  }

  /**
   * Why a change may not go ahead, or undefined. A cookie session must send its
   * CSRF token, and a browser's Origin (sent on every POST) must be the
   * console's. A bearer key is not sent by browsers on their own, so it needs neither.
   */
  refuseChange(ctx: Context, who: Authenticated): string | undefined {
    if (!who.session) return undefined;
    const origin = ctx.get('origin');
    if (origin && origin !== this.#origin) return 'cross-origin request refused';
    if (!this.#sessions.csrfMatches(who.session, ctx.get('x-csrf-token') || undefined))
      return 'missing or wrong CSRF token (send x-csrf-token from /console/api/me)';
    return undefined;
  }
}
