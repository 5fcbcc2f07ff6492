import { z } from 'zod';
import { ROLES } from '../platform/access.js';
import { secret } from '../platform/config/secrets.js';

/**
 * Whether browsers keep a Secure cookie set by this origin: https, or plain
 * http from a potentially trustworthy host (localhost, *.localhost, 127.0.0.0/8,
 * [::1]), as Chromium and Firefox do. The console's cookies are always Secure
 * (http.ts), so any other http:// origin could never sign anyone in.
 */
export function secureForCookies(publicUrl: string): boolean {
  const u = new URL(publicUrl);
  if (u.protocol === 'https:') return true;
  if (u.protocol !== 'http:') return false;
  const host = u.hostname.toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(host) || host === '[::1]';
}

/** One group of the identity service and what its members get in the console. */
const groupGrantSchema = z
  .strictObject({
    group: z.string().min(1).describe('A group name as the ID token carries it in `oidc.groups_claim`.'),
    orgs: z
      .array(z.string().min(1))
      .min(1)
      .describe('The orgs (as configured: the org column) its members may see. Anything of another org answers 404.'),
    role: z
      .enum(ROLES)
      .default('viewer')
      .describe('viewer reads; analyst also acknowledges, assigns and closes alerts.'),
  })
  .describe('Members of `group` see `orgs` with `role`.');

const oidcSchema = z
  .strictObject({
    issuer: z
      .url()
      .describe(
        "The identity service's issuer (https://<org>.example.com, or an authorization server's). Its /.well-known/openid-configuration names the endpoints.",
      ),
    client_id: z.string().min(1).describe("The console's OIDC web application client id."),
    client_secret: secret(
      z
        .string()
        .min(1)
        .describe(
          'Its client secret (use ${ENV_VAR}), sent as client_secret_post; omit for a public client (PKCE only).',
        ),
    ).optional(),
    scopes: z
      .array(z.string())
      .default(['openid', 'profile', 'email', 'groups', 'offline_access'])
      .refine((s) => s.includes('openid') && s.includes('offline_access'), {
        message:
          'must include openid and offline_access: the refresh token is how groups are re-checked every console.regrant_minutes',
      })
      .describe(
        "Scopes asked for. openid and offline_access are required (the console's application needs the refresh token grant at the identity service).",
      ),
    groups_claim: z.string().min(1).default('groups').describe("The ID token claim listing the user's groups."),
    grants: z
      .array(groupGrantSchema)
      .min(1)
      .describe('Groups that may use the console. A user in several gets the union of orgs and the highest role.'),
    clock_tolerance_s: z.number().int().min(0).max(300).default(30).describe('Allowed clock skew for the ID token.'),
  })
  .describe('Sign-in through the identity service: OpenID Connect, authorization code with PKCE.');

/**
 * The `console` section: the analysts' web console at /console. Off unless
 * `enabled`; then `public_url`, `session_secret` and `oidc` are required.
 */
export const consoleSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Serve the console at /console (and its API at /console/api).'),
    public_url: z
      .url()
      .optional()
      .describe(
        "The console's external origin as browsers reach it (https://hooklog.example.com): the OIDC redirect URI is <public_url>/console/auth/callback, and changes must come from this origin. https, or plain http on localhost or a loopback address only: browsers keep the console's Secure cookies from no other http:// origin.",
      ),
    session_secret: secret(
      z
        .string()
        .min(32, 'session_secret must be at least 32 characters')
        .describe(
          'Signs session cookies (HS256; use ${ENV_VAR}). Every instance of a fleet needs the same one, so a session works on any of them.',
        ),
    ).optional(),
    session_ttl_minutes: z
      .number()
      .int()
      .min(1)
      .max(7 * 24 * 60)
      .default(480)
      .describe('A session lasts this long after sign-in, then the user signs in again.'),
    regrant_minutes: z
      .number()
      .min(0.05)
      .max(24 * 60)
      .default(15)
      .describe(
        "A signed-in user's groups are re-checked at the identity service (with the refresh token) at least this often; a grant removed there ends the session at the next request after that. Fractions are allowed (0.5 = 30 s).",
      ),
    sign_in_attempts_per_minute: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(10)
      .describe(
        'Sign-in attempts (login starts and callbacks) allowed per client address per minute; more answer 429.',
      ),
    change_visible_timeout_ms: z
      .number()
      .int()
      .min(0)
      .max(60_000)
      .default(5000)
      .describe(
        'How long a change waits to be readable from ClickHouse before answering (202 after that: it is recorded and will show).',
      ),
    oidc: oidcSchema.optional(),
  })
  .superRefine((c, ctx) => {
    if (!c.enabled) return;
    for (const key of ['public_url', 'session_secret', 'oidc'] as const) {
      if (c[key] === undefined)
        ctx.addIssue({ code: 'custom', path: [key], message: `is required when console.enabled is true` });
    }
    if (c.public_url !== undefined && !/^https?:$/.test(new URL(c.public_url).protocol))
      ctx.addIssue({ code: 'custom', path: ['public_url'], message: 'must be an https:// (or http://localhost) URL' });
    else if (c.public_url !== undefined && !secureForCookies(c.public_url))
      ctx.addIssue({
        code: 'custom',
        path: ['public_url'],
        message:
          "plain http:// works only on localhost or a loopback address: browsers drop the console's Secure cookies " +
          'from any other http:// origin, so no sign-in could finish. Serve HTTPS (server.tls, or a TLS proxy in ' +
          'front of hooklog) and write its https:// URL',
      });
  })
  .prefault({})
  .describe("The analysts' web console (/console): alerts to triage, users and IPs, queries with charts, operations.");

export type ConsoleConfig = z.output<typeof consoleSchema>;
