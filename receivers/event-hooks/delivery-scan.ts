/**
 * One pass over a delivery body's bytes, instead of JSON.parse building every event only to check three
 * fields of each and throw the rest away (with its garbage) while a second walk found each event's bytes.
 * The pass gives what the receiver decides by:
 * - JSON.parse's verdict on the body (platform/json/lexer.ts reads the tokens; the caller has checked
 *   UTF-8), and how deep it nests (brackets open at once, as body.ts's nestingExceeds counts them);
 * - the envelope's `eventType`, `eventId`, `eventID`, `source`, `data` and `data.events` tokens;
 * - each element of `data.events`: its bytes, which become the record's value as sent (numbers, escapes,
 *   key order and all), and whether it passes the LogEvent rules on its own uuid, published and
 *   eventType (`logEventFieldsMeetRules`, decoded as JSON.parse would). An element that does not is
 *   decided, and worded, by the full check on its parsed value.
 * What it records agrees with the parsed value: a key given twice counts by its last occurrence (a
 * repeated `data` or `events` starts the events again), keys are compared after unescaping
 * (`"d\u0061ta"` is data), and `__proto__` is a key like any other.
 * delivery-scan.test.ts holds it to JSON.parse on edge cases and seeded corruptions.
 */
import { logEventBytesMeetRules, logEventFieldsMeetRules } from '../../schemas/logevent.js';
import {
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  INVALID,
  Kind,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
  begin,
  buf,
  deepest,
  end,
  escaped,
  finish,
  lastKind,
  opened,
  skipScalar,
  skipString,
  skipValue,
  space,
} from '../../platform/json/lexer.js';

/** The envelope's tokens, by slot of three ints (kind, start, end): `Envelope.eventId * 3` and so on. */
export const Envelope = { eventType: 0, eventId: 1, eventID: 2, source: 3, data: 4, events: 5 } as const;
const ROOT_KEYS = names(['eventType', 'eventId', 'eventID', 'source', 'data']);
const DATA_KEYS = names(['events']);
/** An event's fields the LogEvent rules read, by slot of three ints in `fields`. */
const EVENT_KEYS = names(['uuid', 'published', 'eventType']);

function names(list: readonly string[]): readonly Buffer[] {
  return list.map((n) => Buffer.from(n));
}

/** Per event: start, end, and 1 when it passes the LogEvent rules by its fields (else 0). */
const EVENT_INTS = 3;
/** Room kept between scans; a delivery with more events grows it for itself only. */
const KEPT_EVENTS = 1024;

let body: Buffer = Buffer.alloc(0);
let events = new Int32Array(KEPT_EVENTS * EVENT_INTS);
let count = 0;
const envelope = new Int32Array(6 * 3);
const fields = new Int32Array(3 * 3);
/** Past the last key read by `keyAt`. */
let keyEnd = 0;

/** A scan's findings, valid until the next scan. */
export interface DeliveryScan {
  /** What JSON.parse would say of the body: when false, nothing else here means anything. */
  readonly valid: boolean;
  /** The most brackets the body holds open at once. */
  readonly depth: number;
  /** The root is an object (else the envelope is all ABSENT). */
  readonly object: boolean;
  /** Kind, start and end of each `Envelope` token. */
  readonly envelope: Int32Array;
  /** Elements of the last `data.events` array (when `envelope` says it is one): EVENT_INTS each. */
  readonly count: number;
  readonly events: Int32Array;
}

/** The string a token holds, as JSON.parse reads it; undefined for any other kind. */
export function stringAt(bytes: Buffer, kind: number, start: number, stop: number): string | undefined {
  if (kind === Kind.STRING) return bytes.toString('utf8', start + 1, stop - 1);
  if (kind === Kind.STRING_ESCAPED) return JSON.parse(bytes.toString('utf8', start, stop)) as string;
  return undefined;
}

/** Scans a body already checked to be UTF-8; a leading byte-order mark is skipped, as body.ts's utf8Text drops it. */
export function scanDelivery(bytes: Buffer): DeliveryScan {
  if (events.length > KEPT_EVENTS * EVENT_INTS) events = new Int32Array(KEPT_EVENTS * EVENT_INTS);
  begin(bytes);
  body = bytes;
  count = 0;
  envelope.fill(0);
  let valid = false;
  let object = false;
  let depth = 0;
  try {
    let p = space(bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0);
    object = buf[p] === OPEN_OBJECT;
    p = space(object ? readEnvelope(p) : skipValue(p));
    valid = p === end;
    depth = deepest;
  } catch (err) {
    // A SyntaxError is JSON.parse's, on an escaped key: only a valid token reaches it, so it never fires.
    if (err !== INVALID && !(err instanceof SyntaxError)) throw err;
  } finally {
    finish();
    body = EMPTY;
  }
  return { valid, depth, object, envelope, count, events };
}
const EMPTY = Buffer.alloc(0);

/** Which of `keys` the key at `p` names, after unescaping, or -1; `keyEnd` is past its closing quote. */
function keyAt(p: number, keys: readonly Buffer[]): number {
  if (buf[p] !== QUOTE) throw INVALID;
  keyEnd = skipString(p);
  const length = keyEnd - p - 2;
  if (escaped) {
    const name = stringAt(body, Kind.STRING_ESCAPED, p, keyEnd);
    return keys.findIndex((k) => k.toString() === name);
  }
  const b = buf;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (k.length !== length) continue;
    let j = 0;
    while (j < length && b[p + 1 + j] === k[j]) j++;
    if (j === length) return i;
  }
  return -1;
}

/** Past the value at `p` (inside `level` containers), its kind and range in `slots` at `at`. */
function token(p: number, level: number, slots: Int32Array, at: number): number {
  const c = buf[p];
  slots[at + 1] = p;
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    slots[at] = c === OPEN_OBJECT ? Kind.OBJECT : Kind.ARRAY;
    p = skipValue(p, level);
  } else {
    p = skipScalar(p);
    slots[at] = lastKind;
  }
  slots[at + 2] = p;
  return p;
}

/**
 * Reads the members of the object at `p` (its `{`, inside `level` containers), handing each key of
 * `keys` to `member` (which reads its value and returns past it) and skipping the rest; past its `}`.
 */
function readMembers(
  p: number,
  level: number,
  keys: readonly Buffer[],
  member: (k: number, p: number) => number,
): number {
  opened(level);
  p = space(p + 1);
  if (buf[p] === CLOSE_OBJECT) return p + 1;
  for (;;) {
    const k = keyAt(p, keys);
    p = space(keyEnd);
    if (buf[p] !== COLON) throw INVALID;
    p = space(p + 1);
    p = k === -1 ? skipValue(p, level + 1) : member(k, p);
    p = space(p);
    const d = buf[p];
    if (d === CLOSE_OBJECT) return p + 1;
    if (d !== COMMA) throw INVALID;
    p = space(p + 1);
  }
}

function readEnvelope(p: number): number {
  return readMembers(p, 0, ROOT_KEYS, envelopeMember);
}

function envelopeMember(k: number, p: number): number {
  const at = k * 3;
  if (k !== Envelope.data) return token(p, 1, envelope, at);
  // The last `data` is the one JSON.parse keeps: forget what an earlier one held.
  count = 0;
  envelope.fill(0, Envelope.events * 3, Envelope.events * 3 + 3);
  if (buf[p] !== OPEN_OBJECT) return token(p, 1, envelope, at);
  envelope[at] = Kind.OBJECT;
  envelope[at + 1] = p;
  p = readMembers(p, 1, DATA_KEYS, dataMember);
  envelope[at + 2] = p;
  return p;
}

function dataMember(_k: number, p: number): number {
  const at = Envelope.events * 3;
  count = 0;
  if (buf[p] !== OPEN_ARRAY) return token(p, 2, envelope, at);
  envelope[at] = Kind.ARRAY;
  envelope[at + 1] = p;
  p = readEvents(p);
  envelope[at + 2] = p;
  return p;
}

/** Reads the events array at `p` (inside envelope and data); past its `]`. */
function readEvents(p: number): number {
  opened(2);
  p = space(p + 1);
  if (buf[p] === CLOSE_ARRAY) return p + 1;
  for (;;) {
    const start = p;
    let pass = 0;
    if (buf[p] === OPEN_OBJECT) {
      fields.fill(0);
      p = readMembers(p, 3, EVENT_KEYS, eventMember);
      pass = passes() ? 1 : 0;
    } else p = skipValue(p, 3);
    if ((count + 1) * EVENT_INTS > events.length) {
      const bigger = new Int32Array(events.length * 2);
      bigger.set(events);
      events = bigger;
    }
    const at = count++ * EVENT_INTS;
    events[at] = start;
    events[at + 1] = p;
    events[at + 2] = pass;
    p = space(p);
    const d = buf[p];
    if (d === CLOSE_ARRAY) return p + 1;
    if (d !== COMMA) throw INVALID;
    p = space(p + 1);
  }
}

function eventMember(k: number, p: number): number {
  return token(p, 4, fields, k * 3);
}

/** The event just read passes the LogEvent rules by its uuid, published and eventType. */
function passes(): boolean {
  const f = fields;
  // Strings as the service sends them are decided on their bytes; anything else is decoded first.
  if (
    f[0] === Kind.STRING &&
    f[3] === Kind.STRING &&
    f[6] === Kind.STRING &&
    logEventBytesMeetRules(buf, f[1]! + 1, f[2]! - 1, f[4]! + 1, f[5]! - 1, f[7]! + 1, f[8]! - 1)
  )
    return true;
  return logEventFieldsMeetRules(
    stringAt(body, f[0]!, f[1]!, f[2]!),
    stringAt(body, f[3]!, f[4]!, f[5]!),
    stringAt(body, f[6]!, f[7]!, f[8]!),
  );
}
