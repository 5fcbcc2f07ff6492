/**
 * The rule part of a token hook's config (conditions, actions, lookup tables):
 * the schemas and the types compiled rules are built from. config.ts adds the
 * hook around them and checks every rule by compiling it (rules.ts), which in
 * turn reads these types: keeping them here keeps that an arrow, not a circle.
 */
import { z } from 'zod';
import { RISK_LEVELS } from '../../schemas/risk.js';

export const slug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');
const identifier = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a letter or _ followed by letters, digits or _');
const values = (what: string) => z.array(z.string().min(1)).min(1).describe(what);

function stringTest(what: string) {
  return z
    .union([
      z.array(z.string()).min(1).describe('The value equals one of these.'),
      z
        .strictObject({
          any_of: z.array(z.string()).min(1).optional().describe('The value equals one of these.'),
          prefix: z.string().min(1).optional().describe('The value starts with this.'),
          suffix: z.string().min(1).optional().describe('The value ends with this, e.g. "@example.com".'),
          regex: z
            .string()
            .min(1)
            .optional()
            .describe(
              'The value matches this JavaScript regular expression (anchor it with ^…$ for a whole match); one V8 ' +
                'can match in linear time (no backreferences or lookaround), so no login makes a sign-in wait.',
            ),
          ignore_case: z
            .boolean()
            .default(false)
            .describe('Compare without regard to case (any_of, prefix, suffix; not a regex: write [Aa] in it).'),
        })
        .describe('Every test given must hold.'),
    ])
    .describe(`${what} A list of exact values, or an object of tests. An absent value never matches.`);
}

const baseConditions = {
  client_id: stringTest('The OAuth client id (protocol.client.id).').optional(),
  scopes_any: values(
    'At least one of these scopes was requested (protocol.request.scope; the granted scopes when absent).',
  ).optional(),
  scopes_all: values('Every one of these scopes was requested.').optional(),
  grant_type: values(
    'The grant type is one of these (authorization_code, refresh_token, client_credentials, …). A request with OriginalGrant and no grant_type counts as refresh_token.',
  ).optional(),
  issuer: stringTest("The authorization server's issuer URI (protocol.issuer.uri).").optional(),
  user_login: stringTest("The user's login (user.profile.login, else session.login).").optional(),
  user_profile: z
    .record(z.string().min(1), stringTest('Test for this profile field.'))
    .optional()
    .describe(
      'Profile fields (user.profile.<field>) and the test each must pass; numbers and booleans are compared as text.',
    ),
  amr_any: values(
    'The session was authenticated with at least one of these methods (session.amr, e.g. PASSWORD, MFA).',
  ).optional(),
  mfa_active: z.boolean().optional().describe('session.mfaActive is exactly this.'),
  ip_cidrs: values(
    "The request's IP (request.ipAddress) is in one of these CIDR ranges, IPv4 or IPv6; a bare address means just that address.",
  ).optional(),
  policy_rule_id: values('The access policy rule id (policy.rule.id) is one of these.').optional(),
  risk: z
    .strictObject({
      user: z
        .array(z.enum(RISK_LEVELS))
        .min(1)
        .describe(
          "The user's current level (none, low, medium, high) is one of these: e.g. [high] to deny, [medium, high] to shorten lifetimes.",
        ),
    })
    .optional()
    .describe(
      "Risk from hooklog's findings (<prefix>.risk, kept in memory: no I/O per request; a contribution past its expiry no longer counts). A request without a user id is at none.",
    ),
};

const conditionsSchema = z
  .strictObject({
    ...baseConditions,
    not: z
      .strictObject(baseConditions)
      .optional()
      .describe('The rule is skipped when all of these hold (same conditions as above).'),
  })
  .describe('Conditions on the request, all of which must hold. None means the rule always matches.');

// `tokens`, not `token`: secret-named keys (platform/config/secrets.ts) are redacted in output and logs.
const tokenSelector = z
  .enum(['id', 'access', 'both'])
  .describe(
    'Which token(s): id, access or both. Actions for a token the request is not minting are left out of the answer.',
  );

const claimTarget = {
  tokens: tokenSelector,
  claim: z
    .string()
    .min(1)
    .max(256)
    .describe(
      'Top-level claim name as it appears in the token, unescaped: URI names like https://example.com/roles are escaped by hooklog.',
    ),
  path: z
    .array(z.union([z.string().min(1), z.number().int().min(0)]))
    .max(16)
    .default([])
    .describe('Steps below the claim: member names, array indexes, or "-" (append; only as the last step of an add).'),
};

const lookupRefSchema = z
  .strictObject({
    table: identifier.describe("Name of one of this hook's lookups."),
    key: z.string().min(1).describe('Template of the key to look up, e.g. "{{user.login}}".'),
    column: z
      .string()
      .min(1)
      .optional()
      .describe('Column (CSV) or member (JSON) of the row to use; the whole row when omitted (JSON tables only).'),
    default: z
      .unknown()
      .optional()
      .describe('Value when the key or column is absent; without it the action is left out.'),
  })
  .describe('Take the value from a lookup table.');

const setSchema = z
  .strictObject({
    ...claimTarget,
    value: z.unknown().optional().describe('A literal JSON value (not null).'),
    template: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A string built from the request, e.g. "{{user.profile.department}}"; left out when a variable is absent.',
      ),
    lookup: lookupRefSchema.optional(),
  })
  .describe('Exactly one of value, template or lookup.');

const actionSchema = z
  .strictObject({
    add: setSchema.optional().describe('Add a claim (on an existing claim the service replaces it).'),
    replace: setSchema.optional().describe('Replace an existing claim or member.'),
    remove: z.strictObject(claimTarget).optional().describe('Remove a claim, member or array element.'),
    lifetime: z
      .strictObject({
        tokens: tokenSelector,
        seconds: z.number().int().describe('Token lifetime in seconds, 300..86400.'),
      })
      .optional()
      .describe('Set the token lifetime.'),
    deny: z
      .strictObject({
        error_summary: z
          .string()
          .min(1)
          .max(1024)
          .describe("Recorded in the service's System Log and returned to the client as error_description."),
      })
      .optional()
      .describe('Refuse the token: the client gets server_error. A deny rule carries no other action.'),
  })
  .describe('Exactly one of add, replace, remove, lifetime or deny.');

export const ruleSchema = z
  .strictObject({
    name: slug.describe('Names the rule in config errors, logs, metrics and the audit trail.'),
    when: conditionsSchema.prefault({}),
    actions: z.array(actionSchema).min(1).describe('What the rule does when it matches, in order.'),
    stop: z.boolean().default(false).describe('Evaluate no later rule once this one matched.'),
  })
  .describe(
    'A rule; rules are evaluated in order and every matching rule contributes its actions, until a deny or a stop.',
  );

export const lookupTableSchema = z
  .strictObject({
    name: identifier.describe('Name that actions use in lookup.table.'),
    file: z.string().min(1).describe('Path of the CSV or JSON file (relative to the working directory).'),
    format: z
      .enum(['csv', 'json'])
      .describe(
        'csv: a header row, then one row per key. json: an object keyed by the lookup key, or an array of objects.',
      ),
    key: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Column (CSV, required) or member (JSON array) holding the key. A JSON object is keyed by its own keys.',
      ),
    ignore_case: z.boolean().default(false).describe('Match keys without regard to case (for logins and emails).'),
    reload_interval_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(2000)
      .describe(
        'How often the file is checked for changes. A changed file is reloaded off the request path; a file that fails to load keeps the previous table.',
      ),
  })
  .describe('A lookup table loaded into memory at start and reloaded when its file changes.');

export type RuleConfig = z.output<typeof ruleSchema>;
export type ConditionsConfig = RuleConfig['when'];
export type ActionConfig = RuleConfig['actions'][number];
export type SetActionConfig = NonNullable<ActionConfig['add']>;
export type StringTestConfig = NonNullable<ConditionsConfig['client_id']>;
export type LookupTableConfig = z.output<typeof lookupTableSchema>;
