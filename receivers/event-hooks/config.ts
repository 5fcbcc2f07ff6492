import { z } from 'zod';
import { eventHookRegistrationSchema } from '../registration/config.js';
import { secret } from '../../platform/config/secrets.js';

/**
 * Config of the event-hook receiver: the hooks themselves (`event_hooks`, a
 * list) and the receiver's limits (`event_hook_receiver`). Imported by
 * platform/config/schema.ts, which owns the top level.
 */
const slug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');

const expectedSourceSchema = z
  .strictObject({
    org_url: z
      .url({ protocol: /^https?$/ })
      .describe(
        "The org's base URL exactly as the service names itself in deliveries, e.g. https://acme.okta.com (scheme and host compared case-insensitively, a trailing / ignored).",
      ),
    hook_id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,128}$/, "must be the service's hook id, e.g. who7hphp39JoHLni81d7")
      .describe("The hook's id at the service (the last segment of the envelope source), not hooklog's own path id."),
  })
  .describe(
    'Pin the envelope `source` to <org_url>/api/v1/eventHooks/<hook_id>: a delivery naming another source is refused (400) and dead-lettered. Off when absent.',
  );

export const eventHookSchema = z
  .strictObject({
    id: slug.describe('Hook id: the path segment in /hooks/events/<id>.'),
    org: slug.describe('The org these deliveries belong to (the stream key and the org column).'),
    auth: z
      .strictObject({
        header: z
          .string()
          .regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name')
          .default('authorization')
          .describe("Header carrying the shared secret (the service's authScheme key). Case-insensitive."),
        secrets: secret(
          z
            .array(z.string().min(16, 'secrets must be at least 16 characters'))
            .min(1)
            .max(2)
            .describe(
              'Accepted header values: one, or two during a rotation. For Basic auth, the whole "Basic <base64(user:pass)>" value (the word Basic is matched case-insensitively).',
            ),
        ),
      })
      .describe('How deliveries prove they come from the org.'),
    expected_source: expectedSourceSchema.optional(),
    register: eventHookRegistrationSchema.optional(),
  })
  .describe('An event hook registered with the identity service.');

export const eventHookReceiverSchema = z
  .strictObject({
    max_in_flight_deliveries: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(512)
      .describe(
        'Authenticated deliveries being read, parsed or appended at once; past it hooklog answers 503 with Retry-After instead of queueing. A delivery holds its slot until its append settles, even after a 503, so a stalled stream fills the slots and later deliveries are refused at once.',
      ),
    max_in_flight_bytes: z
      .number()
      .int()
      .min(64 * 1024)
      .default(64 * 1024 * 1024)
      .describe(
        'Request bytes held by those deliveries at once (Content-Length, or server.body_limit_bytes when absent); the memory bound of the receiver.',
      ),
    retry_after_seconds: z.number().int().min(1).max(3600).default(1).describe('Retry-After sent with every 503.'),
    dedupe_capacity: z
      .number()
      .int()
      .min(0)
      .max(10_000_000)
      .default(100_000)
      .describe(
        'Recent delivery eventIds remembered per process (least recently used forgotten first); a repeat of an acknowledged one is acknowledged without appending. 0 turns it off: ClickHouse still keeps one row per (org, uuid).',
      ),
    dedupe_ttl_ms: z
      .number()
      .int()
      .min(1000)
      .default(3_600_000)
      .describe(
        'How long an acknowledged eventId is remembered. The service retries within seconds; an hour also covers an operator replaying a delivery.',
      ),
  })
  .prefault({})
  .describe('Limits and deduplication of the event-hook receiver (POST /hooks/events/:id).');

export type EventHookConfig = z.output<typeof eventHookSchema>;
export type EventHookReceiverConfig = z.output<typeof eventHookReceiverSchema>;

/** `<org_url>/api/v1/eventHooks/<hook_id>`, normalised for comparison. */
export function expectedSourceOf(pin: NonNullable<EventHookConfig['expected_source']>): string {
  return `${pin.org_url.replace(/\/+$/, '')}/api/v1/eventHooks/${pin.hook_id}`;
}
