/**
 * The `ssf_receivers:` config section: one entry per Shared Signals stream the
 * org pushes to hooklog (RFC 8935 push delivery, protocols.md §8). Each entry
 * says whose SETs it takes (`issuer`), where their keys are (`jwks_uri`, or the
 * transmitter's SSF configuration document that names it), which `aud` they
 * must carry, which algorithms and event types are accepted, and the limits.
 */
import { z } from 'zod';
import { uniqueIds } from '../../platform/config/unique.js';
import { secret } from '../../platform/config/secrets.js';
import { JWS_ASYMMETRIC_ALGORITHMS } from '../token-hook/jwks.js';

const slug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');

const loopback = new Set(['127.0.0.1', 'localhost', '[::1]']);
/** Keys decide what is trusted: fetched over TLS, or plain HTTP only on this host. */
const keyServer = z.url().refine((u) => {
  const url = new URL(u);
  return url.protocol === 'https:' || (url.protocol === 'http:' && loopback.has(url.hostname));
}, 'must be https (http only for a loopback address)');

/** The CAEP and SSF event types the org transmits (protocols.md §8), accepted by default. */
export const CAEP_SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
export const CAEP_CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
/** SSF stream verification (the transmitter proves the stream works end to end). */
export const SSF_VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

export const ssfReceiverSchema = z
  .strictObject({
    id: slug.describe('Receiver id: the path segment in POST /hooks/ssf/<id> (the endpoint_url of the SSF stream).'),
    org: slug.describe('The org these SETs belong to (the stream key and the org column).'),
    issuer: z
      .string()
      .min(1)
      .describe("The transmitter's issuer, e.g. https://acme.okta.com: a SET's iss must equal it exactly."),
    jwks_uri: keyServer
      .optional()
      .describe("Where the transmitter's signing keys are. Give this or configuration_url."),
    configuration_url: keyServer
      .optional()
      .describe(
        "The transmitter's SSF configuration document (e.g. https://acme.okta.com/.well-known/ssf-configuration): its jwks_uri is used, once its issuer is checked to equal `issuer`. Read at start, and again on a request while it has not been read.",
      ),
    audience: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1).max(8)])
      .describe(
        "Accepted aud value(s): the aud the org's SSF stream was created with (usually hooklog's endpoint URL).",
      ),
    algorithms: z
      .array(z.enum(JWS_ASYMMETRIC_ALGORITHMS))
      .min(1)
      .default(['RS256', 'ES256'])
      .describe(
        'Accepted signature algorithms; asymmetric only. A SET with alg none, an HMAC algorithm or any other is refused (invalid_key) before a key is looked up.',
      ),
    event_types: z
      .array(z.url())
      .min(1)
      .default([CAEP_SESSION_REVOKED, CAEP_CREDENTIAL_CHANGE, SSF_VERIFICATION])
      .describe(
        "Event type URIs accepted (the stream's events_requested); a SET carrying any other is refused with access_denied.",
      ),
    authorization: z
      .strictObject({
        secrets: secret(
          z
            .array(z.string().min(16, 'secrets must be at least 16 characters'))
            .min(1)
            .max(2)
            .describe(
              "Accepted Authorization header values (the stream's delivery.authorization_header): one, or two during a rotation. Compared in constant time.",
            ),
        ),
      })
      .optional()
      .describe(
        'Also require the push to carry this Authorization header (authentication_failed otherwise). Off when absent.',
      ),
    max_body_bytes: z
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024)
      .default(64 * 1024)
      .describe(
        'Largest SET accepted; a larger body is refused (invalid_request) and dead-lettered by its size alone.',
      ),
    clock_tolerance_s: z
      .number()
      .int()
      .min(0)
      .max(600)
      .default(60)
      .describe("Leeway for the transmitter's clock: iat may be this far in the future, exp this far in the past."),
    max_age_s: z
      .number()
      .int()
      .min(60)
      .max(90 * 86_400)
      .default(7 * 86_400)
      .describe(
        'A SET issued (iat) longer ago than this is refused (invalid_request). Long, because a transmitter re-sends a SET unchanged, iat included, for as long as it retries.',
      ),
    jwks_cache_max_age_ms: z
      .number()
      .int()
      .min(1000)
      .max(86_400_000)
      .default(600_000)
      .describe(
        'Keys older than this are fetched again before the next verification: a key the transmitter removed stops verifying at most this long after.',
      ),
    jwks_cooldown_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(30_000)
      .describe(
        'A SET naming a kid the cached keys lack fetches the keys again, at most once per this interval (rotation without a flood of fetches).',
      ),
    jwks_timeout_ms: z.number().int().min(100).max(30_000).default(5000).describe('Time-out of one key fetch.'),
    ack_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(5000)
      .describe(
        "From a push's arrival to its answer: past it the answer is 503 (the transmitter retries, unchanged) rather than a 202 for a SET not yet durable.",
      ),
    max_in_flight: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(64)
      .describe('Pushes being read, verified or appended at once; past it hooklog answers 503 with Retry-After.'),
    dedupe_capacity: z
      .number()
      .int()
      .min(0)
      .max(10_000_000)
      .default(100_000)
      .describe(
        'Recent jti values remembered per process: a repeat is answered 202 without appending. Beyond it the table still keeps one row per (org, issuer, jti).',
      ),
    dedupe_ttl_ms: z
      .number()
      .int()
      .min(1000)
      .default(86_400_000)
      .describe('How long an accepted jti is remembered in memory.'),
  })
  .superRefine((r, ctx) => {
    if ((r.jwks_uri === undefined) === (r.configuration_url === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['jwks_uri'],
        message: 'give exactly one of jwks_uri and configuration_url',
      });
  })
  .describe('A Shared Signals (SSF) push receiver for the SETs one transmitter sends.');

export const ssfReceiversSchema = z
  .array(ssfReceiverSchema)
  .default([])
  .superRefine(uniqueIds('receiver', 'ssf_receivers'))
  .describe('Shared Signals receivers: POST /hooks/ssf/<id> takes the SETs an org pushes (RFC 8935).');

export type SsfReceiverConfig = z.output<typeof ssfReceiverSchema>;
