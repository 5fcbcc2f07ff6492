/**
 * The `orgs:` section of the config: the identity-service orgs hooklog polls.
 * Wired into platform/config/schema.ts as one top-level key; the same rules
 * hold as for the rest of the schema (strict objects, every option described
 * with a default, units in names, cross-field mistakes named at boot).
 */
import { z } from 'zod';
import { secret } from '../platform/config/secrets.js';
import { ASSERTION_ALGS, loadSigningKey } from './client/keys.js';
import { checkLegacyFilter } from './legacy-events/first-request.js';
import { parseStart } from './start.js';

const slug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');

const start = (fallback: string) =>
  z
    .string()
    .refine(
      (v) => parseStart(v, Date.now()) !== null,
      'must be an ISO-8601 timestamp with a zone (2026-01-01T00:00:00Z) or a duration back from now (90d, 12h, 30m, 45s)',
    )
    .default(fallback);

const pollFields = {
  start: start('7d').describe(
    'Where to begin when there is no stored position: a timestamp or a duration back from now. Clamped to the last 90 days (the retention); ' +
      'ignored once a position is stored (the stored next link always wins).',
  ),
  poll_interval_ms: z
    .number()
    .int()
    .min(100)
    .max(3_600_000)
    .default(15_000)
    .describe(
      'After a short or empty page (caught up), wait this long before calling the same next link again. Full pages are followed at once.',
    ),
  rate_limit_share: z
    .number()
    .gt(0)
    .max(1)
    .default(0.4)
    .describe(
      "Share of the org's rate-limit bucket for this API that hooklog may use per window (the bucket is shared with the org's other clients; " +
        'the service caps one token at 50% by default). Each API (/api/v1/logs, /api/v1/events) is its own bucket with its own share. ' +
        'Every request the bucket lost counts against it, whoever made it, so the poller and a backfill beside it (and a restarted ' +
        'poller) stay within it together. hooklog also never takes the last request of a bucket.',
    ),
  silent_after_ms: z
    .number()
    .int()
    .min(1000)
    .default(3_600_000)
    .describe(
      'An org that returns no new events for this long raises the silent-org signal (metric hooklog_poller_silent).',
    ),
};

const eventType = z.string().regex(/^[A-Za-z0-9_.-]{1,200}$/, 'must be an event type such as user.session.start');

const reconcileSchema = z
  .strictObject({
    event_types: z
      .array(eventType)
      .max(300)
      .default([])
      .describe(
        'The event types the org\'s event hooks subscribe to (at most 300 per hook): only these are read, as a filter eventType eq "…" or …. Required in reconcile mode.',
      ),
    delay_ms: z
      .number()
      .int()
      .min(0)
      .max(86_400_000)
      .default(600_000)
      .describe(
        'How far behind real time a window is read: hooks have delivered, and the sink stored, what they will by then.',
      ),
    cadence_ms: z
      .number()
      .int()
      .min(1000)
      .max(86_400_000)
      .default(300_000)
      .describe(
        'Length of a reconcile window, so one window (usually one request) per cadence; longer windows while catching up.',
      ),
    lost_delivery_interval_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(60_000)
      .describe('How often the System Log is asked for event_hook.delivery failures (lost hook deliveries).'),
    lost_delivery_lookback_ms: z
      .number()
      .int()
      .min(1000)
      .max(86_400_000)
      .default(600_000)
      .describe('On a lost delivery logged at t, [t − this, t] is read again at once for the subscribed types.'),
  })
  .prefault({})
  .describe(
    'Reconcile mode: read the System Log behind real time, only for what hooks deliver, and append what they missed.',
  );

const systemLogSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Poll GET /api/v1/logs (the System Log) into <prefix>.logs.'),
    ...pollFields,
    mode: z
      .enum(['continuous', 'reconcile'])
      .default('continuous')
      .describe(
        'continuous: follow the log as it grows (orgs without hooks). reconcile: for orgs whose event hooks deliver to hooklog; ' +
          "reads behind real time only the hooks' event types and appends what they missed, in fewer requests (see reconcile).",
      ),
    reconcile: reconcileSchema,
  })
  .superRefine((s, ctx) => {
    if (s.mode === 'reconcile' && s.reconcile.event_types.length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['reconcile', 'event_types'],
        message: "reconcile mode needs the event types the org's hooks subscribe to",
      });
    }
  })
  .prefault({})
  .describe('Polling the System Log API: the backstop for event hooks and the way to backfill up to 90 days.');

const legacyEventsSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        'Poll the deprecated GET /api/v1/events into <prefix>.legacy-events (orgs created since 2019 do not have it).',
      ),
    ...pollFields,
    filter: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .superRefine((f, ctx) => {
        const problem = f === undefined ? null : checkLegacyFilter(f);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .describe(
        'Optional filter, e.g. action.objectType eq "core.user_auth.login_success" (clauses joined by "and"). Do not use published: the start is added as published gt "<t>".',
      ),
  })
  .prefault({})
  .describe('Polling the legacy Events API.');

const sswsSchema = z
  .strictObject({
    token: secret(z.string().min(1).describe('API token, sent as "Authorization: SSWS <token>". Use ${ENV_VAR}.')),
  })
  .describe('Authenticate with an API token.');

const oauthSchema = z
  .strictObject({
    client_id: z
      .string()
      .min(1)
      .describe('Client id of the OAuth 2.0 service app (public key / private key client authentication).'),
    private_key: secret(
      z
        .string()
        .min(1)
        .describe(
          "The app's private key: PEM, or a JWK as JSON. Use ${ENV_VAR}. One of private_key, private_key_path.",
        ),
    ).optional(),
    private_key_path: z.string().min(1).optional().describe('File holding the private key (PEM or JWK JSON).'),
    key_id: z
      .string()
      .min(1)
      .optional()
      .describe('kid of the public key registered with the app; optional when the JWK carries one.'),
    algorithm: z
      .enum(ASSERTION_ALGS)
      .optional()
      .describe('Client-assertion algorithm. Default: RS256 for RSA keys, ES256/384/512 by curve for EC keys.'),
    dpop: z
      .boolean()
      .default(false)
      .describe('Bind access tokens with DPoP (when the app requires proof of possession). Nonces are handled.'),
    token_url: z
      .url()
      .optional()
      .describe(
        'Token endpoint. Default <base_url>/oauth2/v1/token (the org authorization server, the only one that issues okta.* scopes).',
      ),
  })
  .superRefine((o, ctx) => {
    if ((o.private_key === undefined) === (o.private_key_path === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['private_key'],
        message: 'set exactly one of private_key and private_key_path',
      });
      return;
    }
    if (o.private_key !== undefined) {
      try {
        loadSigningKey(o.private_key, { kid: o.key_id, alg: o.algorithm }, '');
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['private_key'], message: (err as Error).message });
      }
    }
  })
  .describe(
    'Authenticate as an OAuth 2.0 service app: client credentials with private_key_jwt, scopes okta.logs.read / okta.events.read.',
  );

const authSchema = z
  .strictObject({
    ssws: sswsSchema.optional(),
    oauth: oauthSchema.optional(),
  })
  .superRefine((a, ctx) => {
    if ((a.ssws === undefined) === (a.oauth === undefined))
      ctx.addIssue({ code: 'custom', message: 'set exactly one of auth.ssws and auth.oauth' });
  })
  .describe('How hooklog authenticates to the org: exactly one of ssws, oauth.');

export const orgSchema = z
  .strictObject({
    id: slug.describe(
      "The org's name in hooklog: the stream key and the org column. Use the same name as event_hooks[].org so pushed and polled copies of an event merge.",
    ),
    base_url: z
      .url()
      .refine(
        (u) => /^https?:\/\/[^/?#]+\/?$/.test(u),
        "must be the org's origin only, e.g. https://acme.okta.com (no path or query)",
      )
      .describe("The org's URL, e.g. https://acme.okta.com."),
    auth: authSchema,
    request_timeout_ms: z
      .number()
      .int()
      .min(1000)
      .max(600_000)
      .default(60_000)
      .describe("A reply must be complete within this; above the service's own 30 s query limit (500 E0000009)."),
    system_log: systemLogSchema,
    legacy_events: legacyEventsSchema,
  })
  .describe('An org hooklog polls.');

export const orgsSchema = z
  .array(orgSchema)
  .default([])
  .superRefine((orgs, ctx) => {
    const seen = new Map<string, number>();
    orgs.forEach((o, i) => {
      const prev = seen.get(o.id);
      if (prev !== undefined)
        ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate org id "${o.id}" (also orgs.${prev}.id)` });
      seen.set(o.id, i);
    });
  })
  .describe('Orgs whose System Log (and legacy Events) hooklog polls. Each keeps its position in <prefix>.cursors.');

export type OrgConfig = z.output<typeof orgSchema>;
/** What both poll sections have (the System Log adds mode and reconcile, the legacy Events API a filter). */
export type PollSectionConfig = Pick<
  OrgConfig['system_log'],
  'start' | 'poll_interval_ms' | 'rate_limit_share' | 'silent_after_ms' | 'enabled'
>;
