/**
 * Who an org is and how hooklog proves itself to it: the part of an `orgs:`
 * entry every user of the identity service's APIs shares (the pollers, hook
 * registration, response actions). Each component adds its own sections
 * beside these fields (ingest/config.ts adds system_log and legacy_events).
 */
import { z } from 'zod';
import { secret } from '../config/secrets.js';
import { ASSERTION_ALGS, loadSigningKey } from './keys.js';

export const orgSlug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');

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

export const orgAuthSchema = z
  .strictObject({
    ssws: sswsSchema.optional(),
    oauth: oauthSchema.optional(),
  })
  .superRefine((a, ctx) => {
    if ((a.ssws === undefined) === (a.oauth === undefined))
      ctx.addIssue({ code: 'custom', message: 'set exactly one of auth.ssws and auth.oauth' });
  })
  .describe('How hooklog authenticates to the org: exactly one of ssws, oauth.');

/** The fields of an org's identity, spread into the `orgs:` entry's strict object. */
export const orgIdentityFields = {
  id: orgSlug.describe(
    "The org's name in hooklog: the stream key and the org column. Use the same name as event_hooks[].org so pushed and polled copies of an event merge.",
  ),
  base_url: z
    .url()
    .refine(
      (u) => /^https?:\/\/[^/?#]+\/?$/.test(u),
      "must be the org's origin only, e.g. https://acme.okta.com (no path or query)",
    )
    .describe("The org's URL, e.g. https://acme.okta.com."),
  auth: orgAuthSchema,
  request_timeout_ms: z
    .number()
    .int()
    .min(1000)
    .max(600_000)
    .default(60_000)
    .describe("A reply must be complete within this; above the service's own 30 s query limit (500 E0000009)."),
  management: z
    .strictObject({
      rate_limit_share: z
        .number()
        .gt(0)
        .max(1)
        .default(0.3)
        .describe(
          "Share of each of the org's management API buckets (one per endpoint family: event hooks, inline hooks, users, groups, " +
            'security events) hooklog may use per window, as rate_limit_share does for the System Log; never the last request.',
        ),
    })
    .prefault({})
    .describe("Calls to the org's management API (hook registration, response actions, security events)."),
};

/** What every user of an org's APIs needs of its config entry. */
export type OrgIdentity = z.output<ReturnType<typeof z.strictObject<typeof orgIdentityFields>>>;
