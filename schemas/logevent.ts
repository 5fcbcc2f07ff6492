import { z } from 'zod';
import { parseTimestamp } from '../platform/time.js';

/**
 * A System Log LogEvent as the identity service sends it, in hooks and from
 * /api/v1/logs. Only what hooklog relies on is required (uuid, published,
 * eventType); every other field may be null, absent, or a shape we have not
 * seen yet, so the schema is loose and the original JSON is kept losslessly.
 */
export const isoTimestamp = z.string().refine((s) => parseTimestamp(s, { strict: true }) !== null, {
  message:
    'must be an ISO-8601 timestamp with a time zone, e.g. 2026-11-20T10:00:00.000Z, of a real date and time between the years 1900 and 2299',
});

export const logEventSchema = z.looseObject({
  uuid: z.string().min(1).max(128),
  published: isoTimestamp,
  eventType: z.string().min(1).max(512),
});

/**
 * The same checks as `logEventSchema`, for callers that only decide (valid or
 * not, and when published) and keep the event's bytes as sent: a loose object
 * copies every other field of the event into its result, which was most of
 * the cost of checking a 1000-event page; this one leaves them out.
 */
export const logEventFields = z.object(logEventSchema.shape);

/** The event hook delivery envelope (protocols.md §1). */
export const eventHookDeliverySchema = z.looseObject({
  eventType: z.literal('com.okta.event_hook'),
  eventId: z.string().min(1).max(256).optional(),
  source: z.string().optional(),
  data: z.looseObject({
    events: z.array(z.unknown()),
  }),
});

/** One-line, key-naming summary of a zod error, for dead-letter reasons and 400 bodies. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}
