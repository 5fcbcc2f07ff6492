/**
 * The `token_hooks:` config section: one entry per token inline hook. The
 * schema documents every option; the cross-field checks compile every rule
 * exactly as the running hook will (rules.ts), so a config that would let a
 * reserved claim, an out-of-range lifetime or an unknown template variable
 * reach an answer is refused at load, with the rule named.
 */
import { z } from 'zod';
import { uniqueIds } from '../../platform/config/unique.js';
import { secret } from '../../platform/config/secrets.js';
import { compileRules, placeholderTables } from './rules.js';
import { lookupTableSchema, ruleSchema, slug } from './rule-schema.js';
import { JWS_ASYMMETRIC_ALGORITHMS } from './jwks.js';
import { tokenHookRegistrationSchema } from '../registration/config.js';

const headerAuthSchema = z
  .strictObject({
    type: z.literal('header').describe('A shared secret in a header, as for event hooks.'),
    header: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name')
      .default('authorization')
      .describe('Header carrying the secret. Case-insensitive.'),
    secrets: secret(
      z
        .array(z.string().min(16, 'secrets must be at least 16 characters'))
        .min(1)
        .max(2)
        .describe('Accepted values: one, or two during a rotation.'),
    ),
  })
  .describe('Header secret authentication.');

const loopback = new Set(['127.0.0.1', 'localhost', '[::1]']);
const keyServer = z.url().refine((u) => {
  const url = new URL(u);
  return url.protocol === 'https:' || (url.protocol === 'http:' && loopback.has(url.hostname));
}, 'must be https (http only for a loopback address)');

const oauthAuthSchema = z
  .strictObject({
    type: z.literal('oauth').describe("An OAuth 2.0 bearer JWT from the customer's authorization server."),
    issuer: keyServer.describe("The authorization server's issuer; the token's iss must equal it."),
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).describe('Accepted aud value(s).'),
    scope: z.string().min(1).describe('Custom scope the token must carry in scp.'),
    algorithms: z
      .array(z.enum(JWS_ASYMMETRIC_ALGORITHMS))
      .min(1)
      .default(['RS256'])
      .describe('Accepted signature algorithms; asymmetric only (none and HMAC are never accepted).'),
    clock_tolerance_s: z.number().int().min(0).max(300).default(30).describe('Leeway for exp and nbf.'),
    jwks_url: keyServer.optional().describe('Where the signing keys are; default {issuer}/v1/keys.'),
    jwks_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(2500)
      .default(1000)
      .describe("Time-out of one key fetch; must leave room in the service's 3 s budget."),
    jwks_min_refresh_interval_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(30_000)
      .describe(
        'At most one key fetch per this interval for tokens naming an unknown kid, so a flood of made-up kids cannot hammer the key endpoint.',
      ),
    jwks_refresh_interval_ms: z
      .number()
      .int()
      .min(60_000)
      .max(86_400_000)
      .default(3_600_000)
      .describe('Keys are refetched in the background this often, so retired keys stop verifying.'),
  })
  .describe("OAuth 2.0 bearer JWT authentication, verified with the issuer's published keys.");

const auditSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Append each decision to <prefix>.token-decisions.'),
    queue_capacity: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .default(10_000)
      .describe('Decisions waiting in memory for the stream; from half of this on, they are moved to the disk spool.'),
    batch_records: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(100)
      .describe(
        'Most decisions in one append to the stream (an append also carries at most 128 KB of them): each append is one turn of the event loop, so small batches keep that pause well under a millisecond.',
      ),
    flush_interval_ms: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(50)
      .describe('Decisions are appended at most this long after they were made.'),
    spool_max_bytes: z
      .number()
      .int()
      .min(1024)
      .max(1024 ** 4)
      .default(256 * 1024 ** 2)
      .describe(
        'Cap of the disk spool (<data_dir>/token-hook-audit/<id>.spool) holding decisions the stream did not take; past it, and only there, decisions are dropped and counted.',
      ),
  })
  .prefault({})
  .describe("The audit trail, kept off the answer's latency path.");

export const tokenHookSchema = z
  .strictObject({
    id: slug.describe('Hook id: the path segment in /hooks/token/<id>.'),
    org: slug.describe('The org this hook serves (stream key and org column of the audit trail).'),
    auth: z
      .discriminatedUnion('type', [headerAuthSchema, oauthAuthSchema])
      .describe('How requests prove they come from the org: type header or oauth.'),
    rules: z
      .array(ruleSchema)
      .default([])
      .describe('Rules in evaluation order. No matching rule: 204, the token is issued unchanged.'),
    lookups: z.array(lookupTableSchema).default([]).describe('Lookup tables for lookup actions.'),
    on_error: z
      .enum(['allow', 'deny'])
      .default('allow')
      .describe(
        'On an internal error: allow (204, the service issues the original token) or deny (an error answer, no token). Either way it is logged and counted.',
      ),
    on_error_summary: z
      .string()
      .min(1)
      .max(1024)
      .default('The sign-in could not be completed. Try again later.')
      .describe('errorSummary of the answer when on_error is deny.'),
    max_request_bytes: z
      .number()
      .int()
      .min(4096)
      .max(10 * 1024 * 1024)
      .default(1024 * 1024)
      .describe('Largest request accepted; larger ones get 413.'),
    audit: auditSchema,
    register: tokenHookRegistrationSchema.optional(),
  })
  .superRefine((hook, ctx) => {
    const tables = new Set<string>();
    hook.lookups.forEach((t, i) => {
      if (tables.has(t.name))
        ctx.addIssue({ code: 'custom', path: ['lookups', i, 'name'], message: `duplicate lookup name "${t.name}"` });
      tables.add(t.name);
      if (t.format === 'csv' && !t.key)
        ctx.addIssue({
          code: 'custom',
          path: ['lookups', i, 'key'],
          message: `lookup "${t.name}": a csv table needs key (the key column)`,
        });
    });
    for (const issue of compileRules(hook.rules, placeholderTables(hook.lookups)).issues) {
      ctx.addIssue({ code: 'custom', path: ['rules', issue.index], message: issue.message });
    }
  })
  .describe('A token inline hook (com.okta.oauth2.tokens.transform) registered with the identity service.');

/** The top-level `token_hooks:` key. */
export const tokenHooksSchema = z
  .array(tokenHookSchema)
  .default([])
  .superRefine(uniqueIds('token hook', 'token_hooks'))
  .describe('Token inline hooks this process answers: claim patches, lifetimes and denials decided by rules.');

export type TokenHookConfig = z.output<typeof tokenHookSchema>;
export type OAuthConfig = Extract<TokenHookConfig['auth'], { type: 'oauth' }>;
