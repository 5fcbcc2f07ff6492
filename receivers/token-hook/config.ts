/**
 * The `token_hooks:` config section: one entry per token inline hook. The
 * schema documents every option; the cross-field checks compile every rule
 * exactly as the running hook will (rules.ts), so a config that would let a
 * reserved claim, an out-of-range lifetime or an unknown template variable
 * reach an answer is refused at load, with the rule named.
 */
import { z } from 'zod';
import { compileRules, placeholderTables } from './rules.js';
import { JWS_ASYMMETRIC_ALGORITHMS } from './jwks.js';

const slug = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');
const identifier = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a letter or _ followed by letters, digits or _');
const values = (what: string) => z.array(z.string().min(1)).min(1).describe(what);

function stringTest(what: string) {
  return z.union([
    z.array(z.string()).min(1).describe('The value equals one of these.'),
    z.strictObject({
      any_of: z.array(z.string()).min(1).optional().describe('The value equals one of these.'),
      prefix: z.string().min(1).optional().describe('The value starts with this.'),
      suffix: z.string().min(1).optional().describe('The value ends with this, e.g. "@example.com".'),
      regex: z.string().min(1).optional().describe('The value matches this JavaScript regular expression (anchor it with ^…$ for a whole match).'),
      ignore_case: z.boolean().default(false).describe('Compare without regard to case.'),
    }).describe('Every test given must hold.'),
  ]).describe(`${what} A list of exact values, or an object of tests. An absent value never matches.`);
}

const baseConditions = {
  client_id: stringTest('The OAuth client id (protocol.client.id).').optional(),
  scopes_any: values('At least one of these scopes was requested (protocol.request.scope; the granted scopes when absent).').optional(),
  scopes_all: values('Every one of these scopes was requested.').optional(),
  grant_type: values('The grant type is one of these (authorization_code, refresh_token, client_credentials, …). A request with OriginalGrant and no grant_type counts as refresh_token.').optional(),
  issuer: stringTest('The authorization server\'s issuer URI (protocol.issuer.uri).').optional(),
  user_login: stringTest('The user\'s login (user.profile.login, else session.login).').optional(),
  user_profile: z.record(z.string().min(1), stringTest('Test for this profile field.')).optional()
    .describe('Profile fields (user.profile.<field>) and the test each must pass; numbers and booleans are compared as text.'),
  amr_any: values('The session was authenticated with at least one of these methods (session.amr, e.g. PASSWORD, MFA).').optional(),
  mfa_active: z.boolean().optional().describe('session.mfaActive is exactly this.'),
  ip_cidrs: values('The request\'s IP (request.ipAddress) is in one of these CIDR ranges, IPv4 or IPv6; a bare address means just that address.').optional(),
  policy_rule_id: values('The access policy rule id (policy.rule.id) is one of these.').optional(),
};

const conditionsSchema = z.strictObject({
  ...baseConditions,
  not: z.strictObject(baseConditions).optional().describe('The rule is skipped when all of these hold (same conditions as above).'),
}).describe('Conditions on the request, all of which must hold. None means the rule always matches.');

// `tokens`, not `token`: secret-named keys (platform/config/secrets.ts) are redacted in output and logs.
const tokenSelector = z.enum(['id', 'access', 'both']).describe('Which token(s): id, access or both. Actions for a token the request is not minting are left out of the answer.');

const claimTarget = {
  tokens: tokenSelector,
  claim: z.string().min(1).max(256).describe('Top-level claim name as it appears in the token, unescaped: URI names like https://example.com/roles are escaped by hooklog.'),
  path: z.array(z.union([z.string().min(1), z.number().int().min(0)])).max(16).default([])
    .describe('Steps below the claim: member names, array indexes, or "-" (append; only as the last step of an add).'),
};

const lookupRefSchema = z.strictObject({
  table: identifier.describe('Name of one of this hook\'s lookups.'),
  key: z.string().min(1).describe('Template of the key to look up, e.g. "{{user.login}}".'),
  column: z.string().min(1).optional().describe('Column (CSV) or member (JSON) of the row to use; the whole row when omitted (JSON tables only).'),
  default: z.unknown().optional().describe('Value when the key or column is absent; without it the action is left out.'),
}).describe('Take the value from a lookup table.');

const setSchema = z.strictObject({
  ...claimTarget,
  value: z.unknown().optional().describe('A literal JSON value (not null).'),
  template: z.string().min(1).optional().describe('A string built from the request, e.g. "{{user.profile.department}}"; left out when a variable is absent.'),
  lookup: lookupRefSchema.optional(),
}).describe('Exactly one of value, template or lookup.');

const actionSchema = z.strictObject({
  add: setSchema.optional().describe('Add a claim (on an existing claim the service replaces it).'),
  replace: setSchema.optional().describe('Replace an existing claim or member.'),
  remove: z.strictObject(claimTarget).optional().describe('Remove a claim, member or array element.'),
  lifetime: z.strictObject({
    tokens: tokenSelector,
    seconds: z.number().int().describe('Token lifetime in seconds, 300..86400.'),
  }).optional().describe('Set the token lifetime.'),
  deny: z.strictObject({
    error_summary: z.string().min(1).max(1024).describe('Recorded in the service\'s System Log and returned to the client as error_description.'),
  }).optional().describe('Refuse the token: the client gets server_error. A deny rule carries no other action.'),
}).describe('Exactly one of add, replace, remove, lifetime or deny.');

const ruleSchema = z.strictObject({
  name: slug.describe('Names the rule in config errors, logs, metrics and the audit trail.'),
  when: conditionsSchema.prefault({}),
  actions: z.array(actionSchema).min(1).describe('What the rule does when it matches, in order.'),
  stop: z.boolean().default(false).describe('Evaluate no later rule once this one matched.'),
}).describe('A rule; rules are evaluated in order and every matching rule contributes its actions, until a deny or a stop.');

const lookupTableSchema = z.strictObject({
  name: identifier.describe('Name that actions use in lookup.table.'),
  file: z.string().min(1).describe('Path of the CSV or JSON file (relative to the working directory).'),
  format: z.enum(['csv', 'json']).describe('csv: a header row, then one row per key. json: an object keyed by the lookup key, or an array of objects.'),
  key: z.string().min(1).optional().describe('Column (CSV, required) or member (JSON array) holding the key. A JSON object is keyed by its own keys.'),
  ignore_case: z.boolean().default(false).describe('Match keys without regard to case (for logins and emails).'),
  reload_interval_ms: z.number().int().min(100).max(3_600_000).default(2000)
    .describe('How often the file is checked for changes. A changed file is reloaded off the request path; a file that fails to load keeps the previous table.'),
}).describe('A lookup table loaded into memory at start and reloaded when its file changes.');

const headerAuthSchema = z.strictObject({
  type: z.literal('header').describe('A shared secret in a header, as for event hooks.'),
  header: z.string().regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name').default('authorization').describe('Header carrying the secret. Case-insensitive.'),
  secrets: z.array(z.string().min(16, 'secrets must be at least 16 characters')).min(1).max(2).describe('Accepted values: one, or two during a rotation.'),
}).describe('Header secret authentication.');

const loopback = new Set(['127.0.0.1', 'localhost', '[::1]']);
const keyServer = z.url().refine((u) => { const url = new URL(u); return url.protocol === 'https:' || (url.protocol === 'http:' && loopback.has(url.hostname)); }, 'must be https (http only for a loopback address)');

const oauthAuthSchema = z.strictObject({
  type: z.literal('oauth').describe('An OAuth 2.0 bearer JWT from the customer\'s authorization server.'),
  issuer: keyServer.describe('The authorization server\'s issuer; the token\'s iss must equal it.'),
  audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).describe('Accepted aud value(s).'),
  scope: z.string().min(1).describe('Custom scope the token must carry in scp.'),
  algorithms: z.array(z.enum(JWS_ASYMMETRIC_ALGORITHMS)).min(1).default(['RS256']).describe('Accepted signature algorithms; asymmetric only (none and HMAC are never accepted).'),
  clock_tolerance_s: z.number().int().min(0).max(300).default(30).describe('Leeway for exp and nbf.'),
  jwks_url: keyServer.optional().describe('Where the signing keys are; default {issuer}/v1/keys.'),
  jwks_timeout_ms: z.number().int().min(100).max(2500).default(1000).describe('Time-out of one key fetch; must leave room in the service\'s 3 s budget.'),
  jwks_min_refresh_interval_ms: z.number().int().min(100).max(3_600_000).default(30_000)
    .describe('At most one key fetch per this interval for tokens naming an unknown kid, so a flood of made-up kids cannot hammer the key endpoint.'),
  jwks_refresh_interval_ms: z.number().int().min(60_000).max(86_400_000).default(3_600_000).describe('Keys are refetched in the background this often, so retired keys stop verifying.'),
}).describe('OAuth 2.0 bearer JWT authentication, verified with the issuer\'s published keys.');

const auditSchema = z.strictObject({
  enabled: z.boolean().default(true).describe('Append each decision to <prefix>.token-decisions.'),
  queue_capacity: z.number().int().min(1).max(1_000_000).default(10_000).describe('Decisions waiting for the stream; past this, new ones are dropped and counted, never slowing answers.'),
  batch_records: z.number().int().min(1).max(10_000).default(100)
    .describe('Largest append to the stream. Records are serialised per append on the event loop: small batches keep that pause well under a millisecond.'),
  flush_interval_ms: z.number().int().min(1).max(10_000).default(50).describe('Decisions are appended at most this long after they were made.'),
}).prefault({}).describe('The audit trail, kept off the answer\'s latency path.');

export const tokenHookSchema = z.strictObject({
  id: slug.describe('Hook id: the path segment in /hooks/token/<id>.'),
  org: slug.describe('The org this hook serves (stream key and org column of the audit trail).'),
  auth: z.discriminatedUnion('type', [headerAuthSchema, oauthAuthSchema]).describe('How requests prove they come from the org: type header or oauth.'),
  rules: z.array(ruleSchema).default([]).describe('Rules in evaluation order. No matching rule: 204, the token is issued unchanged.'),
  lookups: z.array(lookupTableSchema).default([]).describe('Lookup tables for lookup actions.'),
  on_error: z.enum(['allow', 'deny']).default('allow')
    .describe('On an internal error: allow (204, the service issues the original token) or deny (an error answer, no token). Either way it is logged and counted.'),
  on_error_summary: z.string().min(1).max(1024).default('The sign-in could not be completed. Try again later.').describe('errorSummary of the answer when on_error is deny.'),
  max_request_bytes: z.number().int().min(4096).max(10 * 1024 * 1024).default(1024 * 1024).describe('Largest request accepted; larger ones get 413.'),
  audit: auditSchema,
}).superRefine((hook, ctx) => {
  const tables = new Set<string>();
  hook.lookups.forEach((t, i) => {
    if (tables.has(t.name)) ctx.addIssue({ code: 'custom', path: ['lookups', i, 'name'], message: `duplicate lookup name "${t.name}"` });
    tables.add(t.name);
    if (t.format === 'csv' && !t.key) ctx.addIssue({ code: 'custom', path: ['lookups', i, 'key'], message: `lookup "${t.name}": a csv table needs key (the key column)` });
  });
  for (const issue of compileRules(hook.rules, placeholderTables(hook.lookups)).issues) {
    ctx.addIssue({ code: 'custom', path: ['rules', issue.index], message: issue.message });
  }
}).describe('A token inline hook (com.okta.oauth2.tokens.transform) registered with the identity service.');

/** The top-level `token_hooks:` key. */
export const tokenHooksSchema = z.array(tokenHookSchema).default([]).superRefine((hooks, ctx) => {
  const seen = new Map<string, number>();
  hooks.forEach((h, i) => {
    const prev = seen.get(h.id);
    if (prev !== undefined) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate token hook id "${h.id}" (also token_hooks.${prev}.id)` });
    seen.set(h.id, i);
  });
}).describe('Token inline hooks this process answers: claim patches, lifetimes and denials decided by rules.');

export type TokenHookConfig = z.output<typeof tokenHookSchema>;
export type RuleConfig = TokenHookConfig['rules'][number];
export type ConditionsConfig = RuleConfig['when'];
export type ActionConfig = RuleConfig['actions'][number];
export type SetActionConfig = NonNullable<ActionConfig['add']>;
export type StringTestConfig = NonNullable<ConditionsConfig['client_id']>;
export type LookupTableConfig = TokenHookConfig['lookups'][number];
export type OAuthConfig = Extract<TokenHookConfig['auth'], { type: 'oauth' }>;
