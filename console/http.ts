/**
 * The console's HTTP plumbing: cookies written by hand (Koa's cookie helper
 * refuses Secure on a plain-HTTP hop, and hooklog usually sits behind a TLS
 * proxy), the security headers every console response carries, and the
 * answers shared by the routes.
 */
import type { Context } from 'koa';

/**
 * Strict CSP: only the console's own script and style files run; no inline
 * script or style, no eval, nothing from elsewhere, no framing, no plugins.
 * Event fields are rendered as text, so this is the second wall, not the first.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function securityHeaders(ctx: Context, cache: 'no-store' | 'assets'): void {
  ctx.set('content-security-policy', CONTENT_SECURITY_POLICY);
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('referrer-policy', 'no-referrer');
  ctx.set('x-frame-options', 'DENY');
  ctx.set('cross-origin-opener-policy', 'same-origin');
  ctx.set('cross-origin-resource-policy', 'same-origin');
  ctx.set('cache-control', cache === 'assets' ? 'private, max-age=300' : 'no-store');
}

export interface CookieOptions {
  readonly path: string;
  readonly maxAgeS: number;
  readonly sameSite: 'Lax' | 'Strict';
}

/** Appends a Set-Cookie: always HttpOnly and Secure. */
export function setCookie(ctx: Context, name: string, value: string, o: CookieOptions): void {
  const cookie = `${name}=${value}; Path=${o.path}; Max-Age=${o.maxAgeS}; HttpOnly; Secure; SameSite=${o.sameSite}`;
  const prev = ctx.response.get('set-cookie');
  const list = Array.isArray(prev) ? prev : prev ? [String(prev)] : [];
  ctx.set('set-cookie', [...list, cookie]);
}

export function clearCookie(ctx: Context, name: string, path: string): void {
  setCookie(ctx, name, '', { path, maxAgeS: 0, sameSite: 'Lax' });
}

/** A cookie's value from the request (the first one of that name). */
export function readCookie(ctx: Context, name: string): string | undefined {
  for (const part of (ctx.get('cookie') || '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The one answer for anything the principal may not see, or that does not exist: they are not told apart. */
export function notFound(ctx: Context): void {
  ctx.status = 404;
  ctx.body = { error: 'not found' };
}

export function badRequest(ctx: Context, error: string, param?: string): void {
  ctx.status = 400;
  ctx.body = param === undefined ? { error } : { error, param };
}

/** Query-string values as single strings; a repeated parameter is refused (null). */
export function singleParams(ctx: Context): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.query)) {
    if (typeof v !== 'string') return null;
    out[k] = v;
  }
  return out;
}

/** A `return_to` we may redirect to after sign-in: a console path on this origin only. */
export function safeReturnTo(value: string | undefined): string {
  if (!value || !value.startsWith('/console') || value.startsWith('//') || /[\\\r\n]/.test(value)) return '/console/';
  return value;
}
