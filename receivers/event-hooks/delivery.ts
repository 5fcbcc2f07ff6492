import { checkDelivery, describeIssues, logEventFields, meetsLogEventRules } from '../../schemas/logevent.js';
import { Header, deadLetter } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { nestingExceeds, tooDeep, utf8Text } from '../body.js';
import { scanDelivery } from './raw-events.js';

export interface DeliveryContext {
  readonly org: string;
  readonly hookId: string;
  readonly receivedAt: Date;
  /** `<org_url>/api/v1/eventHooks/<id>` when the hook pins its source (config `expected_source`). */
  readonly expectedSource?: string;
}

/** Why a whole body was refused (400, raw body dead-lettered). A closed list: it is a metric label. */
export type BodyRejection = 'invalid-utf8' | 'too-deep' | 'not-json' | 'not-delivery' | 'source-mismatch';

export type DeliveryParse =
  | {
      readonly ok: true;
      readonly deliveryId: string | undefined;
      readonly events: StreamRecord[];
      readonly rejected: StreamRecord[];
    }
  | { readonly ok: false; readonly rejection: BodyRejection; readonly reason: string };

export const ORIGIN = 'event-hook';

/**
 * Deepest JSON accepted. A LogEvent inside a delivery is about 10 levels deep;
 * the limit only has to stay far below where recursive code (JSON.stringify,
 * log serialisers) overflows the stack, near 5,000 levels.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * The LogEvent rules (schemas/logevent.ts: `logEventFields`), the same a
 * polled event meets: the uuid a valid event id (a canonical UUID, the key
 * events fold by: `EVENT_UUID` says why), `published` a real calendar instant
 * in 1900..2299 (the range the events table accepts, so nothing acknowledged
 * here is refused later). A plain object schema, not the loose one: the
 * event's bytes are kept as sent and only the verdict is used. Unknown fields
 * are accepted.
 */
export const hookEventSchema = logEventFields;

/**
 * `hookEventSchema`'s verdict on one event: undefined when it passes, else
 * why not. A passing event is decided without zod (`meetsLogEventRules`);
 * anything else goes to zod, which has the last word and says why.
 */
export function hookEventProblem(event: unknown): string | undefined {
  if (meetsLogEventRules(event)) return undefined;
  const checked = hookEventSchema.safeParse(event);
  return checked.success ? undefined : describeIssues(checked.error);
}

/**
 * Splits a delivery into records for the logs topic and dead letters. An
 * invalid event must not cost the valid ones their place: answering 4xx would
 * make the service drop the whole delivery for good, so each invalid event is
 * dead-lettered on its own and the rest go on. Only a body that is not a
 * delivery at all is refused whole.
 *
 * Each event's record value is the event's own bytes in the body, as the
 * service sent them (raw-events.ts finds them): the body is parsed once, for
 * validation, and no event is serialised again.
 */
export function parseDelivery(body: Buffer, ctx: DeliveryContext): DeliveryParse {
  const text = utf8Text(body);
  if (!text.ok) return { ok: false, rejection: text.reason, reason: text.detail };
  let json: unknown;
  try {
    json = JSON.parse(text.text);
  } catch (err) {
    return { ok: false, rejection: 'not-json', reason: `body is not JSON: ${(err as Error).message}` };
  }
  // One pass finds each event's bytes and the depth; the limit is checked before anything recursive
  // (the validators below, log serialisers) sees the parsed value. Were the scan ever to fail on a
  // body JSON.parse took, the depth is measured on its own.
  const scan = scanDelivery(body);
  if (scan.depth === null ? nestingExceeds(body, MAX_JSON_DEPTH) : scan.depth > MAX_JSON_DEPTH) {
    const deep = tooDeep(MAX_JSON_DEPTH);
    return { ok: false, rejection: deep.reason, reason: deep.detail };
  }
  const read = checkDelivery(json);
  if (!read.ok) return { ok: false, rejection: 'not-delivery', reason: `not an event hook delivery: ${read.reason}` };
  const envelope = read.envelope;
  if (ctx.expectedSource !== undefined && !sourceMatches(envelope.source, ctx.expectedSource)) {
    return {
      ok: false,
      rejection: 'source-mismatch',
      reason: `delivery source is not the pinned ${ctx.expectedSource}`,
    };
  }

  const deliveryId = envelope.eventId ?? legacyEventId(envelope.eventID);
  const headers: Record<string, string> = {
    [Header.org]: ctx.org,
    [Header.source]: 'hook',
    [Header.hookId]: ctx.hookId,
    [Header.receivedAt]: ctx.receivedAt.toISOString(),
  };
  if (deliveryId) headers[Header.deliveryId] = deliveryId;

  const events: StreamRecord[] = [];
  const rejected: StreamRecord[] = [];
  const parsedEvents = envelope.events;
  const ranges = scan.ranges;
  // The scan and JSON.parse read the same valid JSON, so they always agree; were they ever not to,
  // the event's re-serialisation (deep-equal to what was sent) is kept rather than losing it.
  const exact = ranges !== null && ranges.length === parsedEvents.length;
  for (let i = 0; i < parsedEvents.length; i++) {
    const event = parsedEvents[i];
    const raw = exact ? body.subarray(ranges[i]![0], ranges[i]![1]) : Buffer.from(JSON.stringify(event));
    const problem = hookEventProblem(event);
    if (problem === undefined) events.push({ key: ctx.org, value: raw, headers });
    else rejected.push(deadLetter(raw, `data.events.${i}: ${problem}`, ORIGIN, headers, ctx.org));
  }
  return { ok: true, deliveryId, events, rejected };
}

/** Older docs (and two corpus deliveries) spell the envelope's id `eventID`. */
function legacyEventId(id: unknown): string | undefined {
  return typeof id === 'string' && id.length > 0 && id.length <= 256 ? id : undefined;
}

/**
 * True when `source` names the same hook as `expected`: scheme and host
 * compared case-insensitively (URL parsing lower-cases them), path and query
 * exactly, a trailing slash ignored.
 */
export function sourceMatches(source: unknown, expected: string): boolean {
  if (typeof source !== 'string') return false;
  const norm = (s: string) => {
    try {
      const u = new URL(s);
      return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}${u.search}`;
    } catch {
      return undefined;
    }
  };
  const a = norm(source);
  return a !== undefined && a === norm(expected);
}
