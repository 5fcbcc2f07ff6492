/**
 * /console/auth/login → the identity service → /console/auth/callback → the
 * page the user asked for. Both steps are rate-limited per client address;
 * every outcome is logged (who, from where, why not) without tokens or codes.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Logger } from '../platform/log.js';
import { errorMessage } from '../platform/errors.js';
import { clearCookie, readCookie, safeReturnTo, securityHeaders, setCookie } from './http.js';
import { randomToken, type OidcClient } from './oidc.js';
import type { AttemptLimiter } from './rate-limit.js';
import { LOGIN_COOKIE, SESSION_COOKIE, type Session, type SessionKeys } from './session.js';
import type { ConsoleAuth } from './auth.js';

export interface SignInDeps {
  readonly oidc: OidcClient;
  readonly sessions: SessionKeys;
  readonly auth: ConsoleAuth;
  readonly limiter: AttemptLimiter;
  readonly log: Logger;
  readonly now: () => number;
  /** Appends the session's revocation (signed_out) to the stream; resolves once it is durable. */
  readonly revoke: (s: Session) => Promise<void>;
}

const CALLBACK_PATH = '/console/auth';

function plainPage(ctx: Context, status: number, text: string): void {
  securityHeaders(ctx, 'no-store');
  ctx.status = status;
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = text;
}

export function mountSignIn(router: Router, d: SignInDeps): void {
  const limited = (ctx: Context): boolean => {
    const verdict = d.limiter.take(ctx.ip, d.now());
    if (verdict.allowed) return false;
    ctx.set('retry-after', String(verdict.retryAfterS));
    d.log.warn({ ip: ctx.ip, path: ctx.path }, 'console_sign_in_rate_limited');
    plainPage(ctx, 429, 'Too many sign-in attempts from this address; try again in a minute.');
    return true;
  };

  router.get('/console/auth/login', async (ctx) => {
    if (limited(ctx)) return;
    const returnTo = safeReturnTo(typeof ctx.query.return_to === 'string' ? ctx.query.return_to : undefined);
    const state = randomToken();
    const nonce = randomToken();
    const verifier = randomToken();
    let target: string;
    try {
      target = await d.oidc.authorizeUrl(state, nonce, verifier);
    } catch (err) {
      d.log.error({ err: errorMessage(err) }, 'console_sign_in_unavailable');
      return plainPage(ctx, 503, 'The identity service cannot be reached for sign-in; try again shortly.');
    }
    // Lax, not Strict: the identity service sends the browser back with a cross-site top-level GET.
    setCookie(ctx, LOGIN_COOKIE, await d.sessions.issueLogin({ state, nonce, verifier, returnTo }, d.now()), {
      path: CALLBACK_PATH,
      maxAgeS: d.sessions.loginTtlS,
      sameSite: 'Lax',
    });
    securityHeaders(ctx, 'no-store');
    ctx.redirect(target);
  });

  router.get('/console/auth/callback', async (ctx) => {
    if (limited(ctx)) return;
    const login = await d.sessions.verifyLogin(readCookie(ctx, LOGIN_COOKIE), d.now());
    clearCookie(ctx, LOGIN_COOKIE, CALLBACK_PATH);
    const { code, state, error } = ctx.query;
    if (typeof error === 'string') {
      d.log.warn({ ip: ctx.ip, error: error.slice(0, 100) }, 'console_sign_in_refused_by_idp');
      return plainPage(ctx, 403, 'The identity service did not sign you in.');
    }
    if (!login || typeof code !== 'string' || typeof state !== 'string' || state !== login.state) {
      d.log.warn({ ip: ctx.ip }, 'console_sign_in_bad_state');
      return plainPage(ctx, 400, 'This sign-in is unknown or expired. Start again from /console/.');
    }
    try {
      const { principal, refreshToken } = await d.oidc.signIn(code, login.verifier, login.nonce);
      const { token } = await d.sessions.issue(principal, d.now(), refreshToken);
      setCookie(ctx, SESSION_COOKIE, token, {
        path: '/console',
        maxAgeS: Math.floor(d.sessions.ttlS),
        sameSite: 'Lax',
      });
      d.log.info(
        { ip: ctx.ip, user: principal.id, name: principal.name, orgs: principal.orgs, role: principal.role },
        'console_sign_in',
      );
      securityHeaders(ctx, 'no-store');
      ctx.redirect(login.returnTo);
    } catch (err) {
      d.log.warn({ ip: ctx.ip, err: errorMessage(err) }, 'console_sign_in_failed');
      plainPage(ctx, 403, 'Sign-in failed: your account may not use this console.');
    }
  });

  // Sign-out ends the session on the server: its revocation is on the stream (every instance refuses the
  // cookie from then on) before the answer, so a copy of the cookie is worth nothing after a 204.
  router.post('/console/auth/logout', async (ctx) => {
    securityHeaders(ctx, 'no-store');
    try {
      // As it is: a sign-out does not wait for (or need) the identity service.
      const who = await d.auth.principalOf(ctx, false, { regrant: false });
      if (who?.session) {
        const refusal = d.auth.refuseChange(ctx, who);
        if (refusal) {
          ctx.status = 403;
          ctx.body = { error: refusal };
          return;
        }
        await d.revoke(who.session);
        d.log.info({ user: who.principal.id }, 'console_sign_out');
      }
    } catch (err) {
      d.log.error({ err: errorMessage(err) }, 'console_sign_out_failed');
      ctx.status = 503;
      ctx.body = { error: 'the sign-out could not be recorded; the session still holds, try again' };
      return;
    }
    clearCookie(ctx, SESSION_COOKIE, '/console');
    ctx.status = 204;
  });
}
