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

/** `checkLogEvent`'s verdict: the event's `published` when it passes `logEventFields`, else why not. */
export type LogEventCheck = { ok: true; published: string } | { ok: false; reason: string };

/**
 * `logEventFields`' verdict, decided without zod for an event that passes: the
 * pollers check every event of every 1000-event page, and zod's safeParse
 * (a result object, a parse context and the refinement per event) was most of
 * that cost. The same rules written out: a non-array object whose uuid is a
 * string of 1..128 UTF-16 units, published a strict ISO-8601 timestamp (the
 * one parser, parseTimestamp), eventType a string of 1..512 units. Anything
 * else goes to zod itself, which has the last word and says why, so the two
 * can only differ by being slower, never by letting an event through.
 */
export function checkLogEvent(item: unknown): LogEventCheck {
  if (typeof item === 'object' && item !== null && !Array.isArray(item)) {
    const { uuid, published, eventType } = item as Record<string, unknown>;
    if (
      typeof uuid === 'string' &&
      uuid.length >= 1 &&
      uuid.length <= 128 &&
      typeof eventType === 'string' &&
      eventType.length >= 1 &&
      eventType.length <= 512 &&
      parseTimestamp(published, { strict: true }) !== null
    )
      return { ok: true, published: published as string };
  }
  const r = logEventFields.safeParse(item);
  return r.success ? { ok: true, published: r.data.published } : { ok: false, reason: describeIssues(r.error) };
}

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
