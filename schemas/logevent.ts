import { z } from 'zod';
import { HEX_DIGIT } from '../platform/json/lexer.js';
import { isCanonicalTimestamp, parseTimestamp } from '../platform/time.js';

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

/**
 * What a valid event id is, for every path an event enters by (event hooks,
 * System Log polling, backfill, reconcile): a UUID in its canonical text form,
 * 8-4-4-4-12 hex digits, either case (the sink lower-cases it). Why this and
 * nothing looser: the uuid is the key hooklog folds an event's copies by, one
 * row per (org, uuid), so an id that is not unique would silently merge
 * distinct events into one row. The service sends only real System Log UUIDs
 * (time-based, v1 shaped: no version is checked), while placeholders such as
 * "123", "unknown" or "redacted" and near-UUIDs a digit short do circulate in
 * samples and fixtures. An event refused for its id is not lost: it is
 * dead-lettered with its raw JSON.
 */
export const EVENT_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `uuid` is a valid event id (`EVENT_UUID`). */
export const isEventUuid = (uuid: string): boolean => EVENT_UUID.test(uuid);

export const logEventSchema = z.looseObject({
  uuid: z.string().regex(EVENT_UUID, 'must be a UUID (8-4-4-4-12 hex digits)'),
  published: isoTimestamp,
  eventType: z.string().min(1).max(512),
});

/**
 * The same checks as `logEventSchema`, for callers that only decide (valid or
 * not, and when published) and keep the event's bytes as sent: a loose object
 * copies every other field of the event into its result, which was most of
 * the cost of checking a 1000-event page; this one leaves them out. Every
path an event enters by checks it with this schema's rules.
 */
export const logEventFields = z.object(logEventSchema.shape);

/** `checkLogEvent`'s verdict: the event's `published` when it passes `logEventFields`, else why not. */
export type LogEventCheck = { ok: true; published: string } | { ok: false; reason: string };

/**
 * `logEventFields`' rules written out, so the checks that run on every event
 * (the pollers' pages, the event hooks' deliveries) decide a passing event
 * without zod, whose safeParse (a result object, a parse context and the
 * refinement per event) was most of a page's checking cost: a non-array object
 * whose uuid is an event id (`isEventUuid`), published a strict ISO-8601 timestamp (the one parser, parseTimestamp),
 * eventType a string of 1..512 units. False sends the caller to zod, which
 * has the last word and says why, so the two can only differ by being
 * slower, never by letting an event through.
 */
export function meetsLogEventRules(item: unknown): boolean {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  const { uuid, published, eventType } = item as Record<string, unknown>;
  return logEventFieldsMeetRules(uuid, published, eventType);
}

/**
 * `meetsLogEventRules` on an object's own uuid, published and eventType, for a caller that reads them
 * from the event's bytes (receivers/event-hooks/delivery-scan.ts) rather than from a parsed object.
 */
export function logEventFieldsMeetRules(uuid: unknown, published: unknown, eventType: unknown): boolean {
  return (
    typeof uuid === 'string' &&
    isEventUuid(uuid) &&
    typeof eventType === 'string' &&
    eventType.length >= 1 &&
    eventType.length <= 512 &&
    parseTimestamp(published, { strict: true }) !== null
  );
}

/**
 * `logEventFieldsMeetRules` on the three values' bytes as sent (the contents of unescaped JSON strings),
 * when they have the shapes the service sends: a uuid of 8-4-4-4-12 hex digits (`EVENT_UUID`), a
 * canonical published (`isCanonicalTimestamp`) and an ASCII eventType of 1..512 bytes, which is as many
 * UTF-16 units. So the event hooks' delivery scan need not decode three strings per event, which was a
 * fifth of its cost. False decides nothing: the caller decodes and asks `logEventFieldsMeetRules`.
 */
export function logEventBytesMeetRules(
  b: Uint8Array,
  uuidFrom: number,
  uuidTo: number,
  publishedFrom: number,
  publishedTo: number,
  typeFrom: number,
  typeTo: number,
): boolean {
  if (uuidTo - uuidFrom !== 36 || typeTo - typeFrom < 1 || typeTo - typeFrom > 512) return false;
  for (let k = 0; k < 36; k++) {
    const c = b[uuidFrom + k]!;
    if (k === 8 || k === 13 || k === 18 || k === 23 ? c !== 0x2d : HEX_DIGIT[c] !== 1) return false;
  }
  for (let k = typeFrom; k < typeTo; k++) if (b[k]! >= 0x80) return false;
  return isCanonicalTimestamp(b, publishedFrom, publishedTo);
}

/** `logEventFields`' verdict, without zod for an event that passes (`meetsLogEventRules`). */
export function checkLogEvent(item: unknown): LogEventCheck {
  if (meetsLogEventRules(item)) return { ok: true, published: (item as { published: string }).published };
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

/** The envelope fields a delivery is read by, once `eventHookDeliverySchema` accepts it. */
export interface DeliveryEnvelope {
  readonly eventId: string | undefined;
  /** The id as older docs spell it; unchecked. */
  readonly eventID: unknown;
  readonly source: string | undefined;
  readonly events: unknown[];
}

/**
 * `eventHookDeliverySchema`'s verdict, without zod when the envelope passes:
 * the loose object schema copies every field of the envelope (and the events
 * array) into its result, a cost per delivery that one-event deliveries feel
 * most. Anything the plain checks do not accept goes to zod, which decides and
 * says why.
 */
export function checkDelivery(json: unknown): { ok: true; envelope: DeliveryEnvelope } | { ok: false; reason: string } {
  if (typeof json === 'object' && json !== null && !Array.isArray(json)) {
    const { eventType, eventId, source, data, eventID } = json as Record<string, unknown>;
    const events =
      typeof data === 'object' && data !== null && !Array.isArray(data)
        ? (data as Record<string, unknown>).events
        : undefined;
    if (
      eventType === 'com.okta.event_hook' &&
      (eventId === undefined || (typeof eventId === 'string' && eventId.length >= 1 && eventId.length <= 256)) &&
      (source === undefined || typeof source === 'string') &&
      Array.isArray(events)
    )
      return { ok: true, envelope: { eventId, eventID, source, events } };
  }
  const r = eventHookDeliverySchema.safeParse(json);
  if (!r.success) return { ok: false, reason: describeIssues(r.error) };
  const d = r.data;
  return { ok: true, envelope: { eventId: d.eventId, eventID: d.eventID, source: d.source, events: d.data.events } };
}

/** One-line, key-naming summary of a zod error, for dead-letter reasons and 400 bodies. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}
