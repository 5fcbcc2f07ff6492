/**
 * The `response:` config section: what a finding does beyond an alert. Risk
 * changes (`<prefix>.risk-changes`) become Security Event Tokens pushed to the
 * org (the transmitter) and management actions on the user (clear sessions,
 * suspend, …), per org, with a mode, an allow-list and optional approval.
 * Which orgs hooklog may call, and how, stays in `orgs:`; each entry here names
 * one of them (checked where the sections meet, cli/config/schema.ts).
 */
import { z } from 'zod';
import { secret } from '../../platform/config/secrets.js';
import { orgSlug } from '../../platform/identity/config.js';
import { ASSERTION_ALGS, loadSigningKey } from '../../platform/identity/keys.js';

/** The management actions a finding may take on a user (protocols.md §8). */
export const ACTION_NAMES = [
  'clear_sessions',
  'suspend',
  'unsuspend',
  'expire_password',
  'reset_factors',
  'add_to_group',
] as const;
export type ActionName = (typeof ACTION_NAMES)[number];

/** An action as configured: its name, and for `add_to_group` the group (`add_to_group:00g1abc`). */
const actionSpec = z
  .string()
  .regex(
    /^(clear_sessions|suspend|unsuspend|expire_password|reset_factors|add_to_group:[A-Za-z0-9_-]{1,64})$/,
    'must be clear_sessions, suspend, unsuspend, expire_password, reset_factors or add_to_group:<group id>',
  );

const slug = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ -');

/** The vendor's event type for a user's risk level (protocols.md §8). */
export const USER_RISK_CHANGE = 'https://schemas.okta.com/secevent/okta/event-type/user-risk-change';

const transmitterSchema = z
  .strictObject({
    issuer: z
      .url()
      .refine((u) => !u.endsWith('/'), 'must not end with /')
      .describe(
        "`iss` of every SET: hooklog's public URL as the org reaches it, e.g. https://hooklog.example.com. The org " +
          'registers hooklog as a security events provider with this issuer and <issuer>/.well-known/ssf-configuration.',
      ),
    jwks_uri: z
      .url()
      .optional()
      .describe('Where the org fetches the public keys. Default <issuer>/.well-known/jwks.json (served by hooklog).'),
    private_key: secret(
      z
        .string()
        .min(1)
        .describe(
          'The signing key: PEM (PKCS#8) or a JWK as JSON. Use ${ENV_VAR}. One of private_key, private_key_path.',
        ),
    ).optional(),
    private_key_path: z.string().min(1).optional().describe('File holding the signing key (PEM or JWK JSON).'),
    key_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("`kid` of the signing key. Default: the JWK's kid, else its RFC 7638 thumbprint."),
    algorithm: z
      .enum(ASSERTION_ALGS)
      .optional()
      .describe(
        'Signing algorithm (the service accepts RS256 and ES256). Default RS256 for RSA keys, ES256 for P-256.',
      ),
    additional_public_keys: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Public JWKs (JSON) published beside the signing key: during a rotation, the old key, so SETs it signed and ' +
          'that are still being retried verify.',
      ),
    event_type: z
      .url()
      .default(USER_RISK_CHANGE)
      .describe("The event type URI of the vendor's user-risk-change event."),
  })
  .superRefine((t, ctx) => {
    if ((t.private_key === undefined) === (t.private_key_path === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['private_key'],
        message: 'set exactly one of private_key and private_key_path',
      });
      return;
    }
    if (t.private_key !== undefined) {
      try {
        loadSigningKey(t.private_key, { kid: t.key_id ?? 'check', alg: t.algorithm }, '');
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['private_key'], message: (err as Error).message });
      }
    }
  })
  .describe('The Shared Signals transmitter: how SETs are signed and who hooklog says it is.');

const securityEventsSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe("Push a SET to the org's POST /security/api/v1/security-events on every change of a user's level."),
    audience: z.url().optional().describe("`aud` of the org's SETs. Default the org's base_url."),
    subject: z
      .enum(['email', 'iss_sub'])
      .default('email')
      .describe(
        "How the SET names the user: email (the user's login; iss_sub when the login is unknown) or iss_sub " +
          "(iss: the org's base_url, sub: the user id).",
      ),
    initiating_entity: z
      .enum(['admin', 'user', 'policy', 'system'])
      .default('policy')
      .describe('`initiating_entity` of the event: hooklog acts by rule, so policy.'),
    reason_user: z
      .string()
      .min(1)
      .max(500)
      .default('Unusual activity was detected on your account.')
      .describe("`reason_user.en`: what the user may be shown. `reason_admin.en` is the rule's stated reason."),
  })
  .prefault({})
  .describe("Shared Signals for this org: SETs with the vendor's user-risk-change event.");

const orgActionsSchema = z
  .strictObject({
    mode: z
      .enum(['off', 'dry_run', 'on'])
      .default('off')
      .describe(
        'off: no actions and no records; dry_run: every action that would run is recorded (actions table), none is ' +
          'called; on: actions run (those in require_approval once approved).',
      ),
    allow: z
      .array(z.enum(ACTION_NAMES))
      .default([])
      .describe('The actions hooklog may take in this org; any other a finding names is recorded as not_allowed.'),
    require_approval: z
      .array(z.enum(ACTION_NAMES))
      .default([])
      .describe('Actions that wait for `hooklog actions approve <id>` before they run.'),
  })
  .superRefine((a, ctx) => {
    if (a.mode !== 'off' && a.allow.length === 0)
      ctx.addIssue({ code: 'custom', path: ['allow'], message: `mode ${a.mode} needs at least one action in allow` });
    for (const name of a.require_approval)
      if (!a.allow.includes(name))
        ctx.addIssue({ code: 'custom', path: ['require_approval'], message: `${name} is not in allow` });
  })
  .prefault({})
  .describe("Management actions in this org (the org's auth needs okta.users.manage / okta.groups.manage).");

const responseOrgSchema = z
  .strictObject({
    org: orgSlug.describe('An orgs[].id: its base_url and auth are used for SETs and actions.'),
    security_events: securityEventsSchema,
    actions: orgActionsSchema,
  })
  .describe('What hooklog does in one org when a user’s risk changes.');

const actionListSchema = z.array(actionSpec).max(10);

const triggersSchema = z
  .strictObject({
    on_level: z
      .strictObject({
        low: actionListSchema.optional().describe('Actions when a finding raises a user to low.'),
        medium: actionListSchema.optional().describe('Actions when a finding raises a user to medium.'),
        high: actionListSchema.optional().describe('Actions when a finding raises a user to high.'),
      })
      .default({})
      .describe('Actions when a finding raises a user to this level, e.g. high: [clear_sessions].'),
    on_rule: z
      .record(slug, actionListSchema)
      .default({})
      .describe("Actions when this rule's finding changes a user's level (keyed by rule id)."),
    on_cleared: actionListSchema
      .default([])
      .describe("Actions when a user's level falls back to none (every contribution expired), e.g. [unsuspend]."),
  })
  .prefault({})
  .describe(
    'Which risk changes name which actions, for every org listed under response.orgs (each org decides with its mode, ' +
      'allow and require_approval). Each runs once per (alert, action).',
  );

export const responseSchema = z
  .strictObject({
    group: slug
      .default('hooklog-response')
      .describe('Consumer group prefix: <group>.sets on <prefix>.risk-changes, <group>.actions on <prefix>.actions.'),
    transmitter: transmitterSchema.optional(),
    actions: triggersSchema,
    orgs: z
      .array(responseOrgSchema)
      .default([])
      .describe('The orgs hooklog responds in; risk changes of others are skipped.'),
  })
  .superRefine((r, ctx) => {
    const seen = new Set<string>();
    r.orgs.forEach((o, i) => {
      if (seen.has(o.org))
        ctx.addIssue({ code: 'custom', path: ['orgs', i, 'org'], message: `org "${o.org}" is listed twice` });
      seen.add(o.org);
      if (o.security_events.enabled && !r.transmitter)
        ctx.addIssue({
          code: 'custom',
          path: ['orgs', i, 'security_events', 'enabled'],
          message: 'SETs need response.transmitter (issuer and signing key), or set security_events.enabled: false',
        });
    });
  })
  .describe('From detection to response: Shared Signals (SETs) and management actions driven by risk changes.');

export type ResponseConfig = z.output<typeof responseSchema>;
export type ResponseOrgConfig = ResponseConfig['orgs'][number];
export type TransmitterConfig = NonNullable<ResponseConfig['transmitter']>;
export type TriggersConfig = ResponseConfig['actions'];
