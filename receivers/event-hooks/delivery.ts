import { isUtf8 } from 'node:buffer';
import {
  checkDelivery,
  describeIssues,
  logEventFields,
  meetsLogEventRules,
  type DeliveryEnvelope,
} from '../../schemas/logevent.js';
import { Kind } from '../../platform/json/lexer.js';
import { Header, deadLetter } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { INVALID_UTF8, nestingExceeds, tooDeep, utf8Text } from '../body.js';
import { Envelope, scanDelivery, stringAt, type DeliveryScan } from './delivery-scan.js';

export interface DeliveryContext {
  readonly org: string;
  readonly hookId: string;
  readonly receivedAt: Date;
  /** `<org_url>/api/v1/eventHooks/<id>` when the hook pins its source (config `expected_source`). */
  readonly expectedSource?: string;
  /** The request's id, for the dead letters of its invalid events (`REQUEST_ID_HEADER`). */
  readonly requestId?: string;
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

/** Dead letters written by this receiver carry the request id, so a log line and its dead letter can be matched. */
export const REQUEST_ID_HEADER = 'hooklog-request-id';

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
 * service sent them, never serialised again. What is accepted or refused, and
 * why, is what strict UTF-8 decoding, JSON.parse and the schemas' checks on the
 * parsed value would decide; the common case is decided on the bytes
 * (delivery-scan.ts) without building the body's values, and the rest (a body
 * that is not JSON or whose envelope does not pass as it stands, an event that
 * does not pass by its uuid, published and eventType) is parsed, so zod decides
 * it and says why.
 */
export function parseDelivery(body: Buffer, ctx: DeliveryContext): DeliveryParse {
  if (!isUtf8(body)) return NOT_UTF8;
  const scan = scanDelivery(body);
  if (!scan.valid) return parsedWhole(body, ctx, null);
  // Checked before anything recursive (the validators below, log serialisers) sees a parsed value.
  if (scan.depth > MAX_JSON_DEPTH) return TOO_DEEP;
  const envelope = scannedEnvelope(body, scan);
  if (envelope === undefined) return parsedWhole(body, ctx, scan);
  const refused = sourceRefused(envelope.source, ctx);
  if (refused) return refused;
  const { events } = scan;
  return split(
    ctx,
    envelope.eventId ?? legacyEventId(envelope.eventID),
    scan.count,
    (i) => body.subarray(events[i * 3]!, events[i * 3 + 1]!),
    (i, raw) => (events[i * 3 + 2] === 1 ? undefined : hookEventProblem(JSON.parse(raw.toString('utf8')))),
  );
}

const NOT_UTF8: DeliveryParse = { ok: false, rejection: INVALID_UTF8.reason, reason: INVALID_UTF8.detail };
const TOO_DEEP: DeliveryParse = { ok: false, rejection: 'too-deep', reason: tooDeep(MAX_JSON_DEPTH).detail };

/**
 * The envelope as `checkDelivery` reads it when it passes without zod, from the scan's tokens; undefined
 * when it does not pass so (the caller then parses the body and lets `checkDelivery` decide).
 */
function scannedEnvelope(body: Buffer, scan: DeliveryScan): Omit<DeliveryEnvelope, 'events'> | undefined {
  if (!scan.object) return undefined;
  const e = scan.envelope;
  if (envelopeText(body, e, Envelope.eventType) !== 'com.okta.event_hook') return undefined;
  if (e[Envelope.data * 3] !== Kind.OBJECT || e[Envelope.events * 3] !== Kind.ARRAY) return undefined;
  const eventId = envelopeText(body, e, Envelope.eventId);
  if (e[Envelope.eventId * 3] !== Kind.ABSENT && (eventId === undefined || eventId.length < 1 || eventId.length > 256))
    return undefined;
  const source = envelopeText(body, e, Envelope.source);
  if (e[Envelope.source * 3] !== Kind.ABSENT && source === undefined) return undefined;
  return { eventId, eventID: envelopeText(body, e, Envelope.eventID), source };
}

/** The string an envelope token holds, or undefined. */
function envelopeText(body: Buffer, e: Int32Array, slot: number): string | undefined {
  return stringAt(body, e[slot * 3]!, e[slot * 3 + 1]!, e[slot * 3 + 2]!);
}

/**
 * The whole body parsed, as it always was before the scan: for a body the scan found not to be JSON
 * (JSON.parse words why), or whose envelope needs zod's word. Were the scan ever to refuse a body
 * JSON.parse takes, the depth is measured on its own and each event serialised again (deep-equal to
 * what was sent) rather than lost.
 */
function parsedWhole(body: Buffer, ctx: DeliveryContext, scan: DeliveryScan | null): DeliveryParse {
  const text = utf8Text(body);
  if (!text.ok) return { ok: false, rejection: text.reason, reason: text.detail };
  let json: unknown;
  try {
    json = JSON.parse(text.text);
  } catch (err) {
    return { ok: false, rejection: 'not-json', reason: `body is not JSON: ${(err as Error).message}` };
  }
  if (scan === null ? nestingExceeds(body, MAX_JSON_DEPTH) : scan.depth > MAX_JSON_DEPTH) return TOO_DEEP;
  const read = checkDelivery(json);
  if (!read.ok) return { ok: false, rejection: 'not-delivery', reason: `not an event hook delivery: ${read.reason}` };
  const envelope = read.envelope;
  const refused = sourceRefused(envelope.source, ctx);
  if (refused) return refused;
  const parsed = envelope.events;
  const events = scan?.count === parsed.length ? scan.events : null;
  return split(
    ctx,
    envelope.eventId ?? legacyEventId(envelope.eventID),
    parsed.length,
    (i) => (events ? body.subarray(events[i * 3]!, events[i * 3 + 1]!) : Buffer.from(JSON.stringify(parsed[i]))),
    (i) => hookEventProblem(parsed[i]),
  );
}

function sourceRefused(source: unknown, ctx: DeliveryContext): DeliveryParse | undefined {
  if (ctx.expectedSource === undefined || sourceMatches(source, ctx.expectedSource)) return undefined;
  return { ok: false, rejection: 'source-mismatch', reason: `delivery source is not the pinned ${ctx.expectedSource}` };
}

/**
 * The records of a delivery's `n` events: `raw(i)` is event i's bytes, `problem(i, raw)` why it is
 * invalid (undefined: it is valid). One headers object serves the delivery's records; dead letters
 * carry the request id beside it, so a log line and its dead letter can be matched.
 */
function split(
  ctx: DeliveryContext,
  deliveryId: string | undefined,
  n: number,
  raw: (i: number) => Buffer,
  problem: (i: number, raw: Buffer) => string | undefined,
): DeliveryParse {
  const headers: Record<string, string> = {
    [Header.org]: ctx.org,
    [Header.source]: 'hook',
    [Header.hookId]: ctx.hookId,
    [Header.receivedAt]: ctx.receivedAt.toISOString(),
  };
  if (deliveryId) headers[Header.deliveryId] = deliveryId;
  const letterHeaders = ctx.requestId === undefined ? headers : { ...headers, [REQUEST_ID_HEADER]: ctx.requestId };
  const events: StreamRecord[] = [];
  const rejected: StreamRecord[] = [];
  for (let i = 0; i < n; i++) {
    const value = raw(i);
    const why = problem(i, value);
    if (why === undefined) events.push({ key: ctx.org, value, headers });
    else rejected.push(deadLetter(value, `data.events.${i}: ${why}`, ORIGIN, letterHeaders, ctx.org));
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
