/**
 * The `orgs:` section of the config: the identity-service orgs hooklog polls.
 * Wired into platform/config/schema.ts as one top-level key; the same rules
 * hold as for the rest of the schema (strict objects, every option described
 * with a default, units in names, cross-field mistakes named at boot).
 */
import { z } from 'zod';
import { uniqueIds } from '../platform/config/unique.js';
import { orgIdentityFields } from '../platform/identity/config.js';
import { checkLegacyFilter } from './legacy-events/first-request.js';
import { parseStart } from './start.js';

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
  success_record_interval_ms: z
    .number()
    .int()
    .min(1000)
    .max(3_600_000)
    .default(60_000)
    .describe(
      'While caught up (the position not moving), store when the poller last succeeded with its position at most this often, ' +
        'so `hooklog status` and the console tell a quiet org (a recent last success) from a stuck poller (an old one). ' +
        'Each is one small append to <prefix>.cursors; a moving position stores it with every page anyway.',
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

const identitySyncSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        "Sync the org's users with their status, groups and administrator roles into <prefix>.identity (and the identity_users table), " +
          'for rules (actor.groups, actor.adminRoles) and the console. The token needs okta.users.read, okta.groups.read and okta.roles.read ' +
          '(an OAuth service app) or a read-only administrator role (an API token).',
      ),
    interval_ms: z
      .number()
      .int()
      .min(1000)
      .max(86_400_000)
      .default(300_000)
      .describe(
        'How often the users changed since the last pass (lastUpdated after its high-water mark) are read again, with their groups and roles: ' +
          'a status or profile change shows within this.',
      ),
    full_interval_ms: z
      .number()
      .int()
      .min(1000)
      .max(7 * 86_400_000)
      .default(21_600_000)
      .describe(
        "How often every group, member and role is read again. What moves no user's lastUpdated (a role assigned or removed, a user " +
          'added to or removed from a group without other change, a user deleted) shows within this.',
      ),
    rate_limit_share: z
      .number()
      .gt(0)
      .max(1)
      .default(0.2)
      .describe(
        "Share of the org's users and groups rate-limit buckets the sync may use per window; kept with management.rate_limit_share in the " +
          'same ledger, so the sync and response actions stay within the bucket together. The System Log has its own bucket.',
      ),
  })
  .superRefine((s, ctx) => {
    if (s.full_interval_ms < s.interval_ms)
      ctx.addIssue({
        code: 'custom',
        path: ['full_interval_ms'],
        message: `must be at least identity_sync.interval_ms (${s.interval_ms})`,
      });
  })
  .prefault({})
  .describe("Syncing the org's directory (users, groups, administrator roles) from its management API.");

export const orgSchema = z
  .strictObject({
    ...orgIdentityFields,
    system_log: systemLogSchema,
    legacy_events: legacyEventsSchema,
    identity_sync: identitySyncSchema,
  })
  .describe('An org hooklog polls.');

export const orgsSchema = z
  .array(orgSchema)
  .default([])
  .superRefine(uniqueIds('org', 'orgs'))
  .describe('Orgs whose System Log (and legacy Events) hooklog polls. Each keeps its position in <prefix>.cursors.');

export type OrgConfig = z.output<typeof orgSchema>;
/** What both poll sections have (the System Log adds mode and reconcile, the legacy Events API a filter). */
export type PollSectionConfig = Pick<
  OrgConfig['system_log'],
  'start' | 'poll_interval_ms' | 'rate_limit_share' | 'silent_after_ms' | 'success_record_interval_ms' | 'enabled'
>;
