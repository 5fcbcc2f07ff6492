import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { HooklogError } from '../platform/errors.js';

/** Why a body was refused before it was parsed; the receivers map each to a status and a reason. */
export class BodyTooLarge extends HooklogError {
  /** Bytes the client declared (Content-Length), when it did. */
  readonly declaredBytes: number | undefined;
  /** Bytes read before giving up (0 when refused on the declared length alone). */
  readonly receivedBytes: number;
  readonly limitBytes: number;

  constructor(limit: number, declared: number | undefined, received: number) {
    super(
      'RECORD_INVALID',
      `body exceeds ${limit} bytes (${declared !== undefined ? `declared ${declared}` : `more than ${received - 1} received`})`,
      { cause: 'too-large' },
    );
    this.limitBytes = limit;
    this.declaredBytes = declared;
    this.receivedBytes = received;
  }
}

/** The Content-Length a request declares, when it is a usable non-negative integer. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}

/**
 * One body being read. The listeners are module-level functions that find it on the request (an emitter calls
 * its listeners with `this` set to itself), so a read allocates no closures: five closures per request were
 * measurable on the token hook's per-sign-in budget (and under tsx each closure also costs a `__name` define).
 */
class BodyRead {
  readonly limit: number;
  readonly declared: number | undefined;
  readonly chunks: Buffer[] = [];
  size = 0;
  resolve: (body: Buffer) => void = noop;
  reject: (err: unknown) => void = noop;

  constructor(limit: number, declared: number | undefined) {
    this.limit = limit;
    this.declared = declared;
  }
}
const noop = (): void => undefined;
const READING = Symbol('hooklog.bodyRead');
type Reading = IncomingMessage & { [READING]?: BodyRead | undefined };

/** The read `new Promise(capture)` is being made for: the executor runs synchronously, within readBody. */
let capturing: BodyRead | undefined;
function capture(resolve: (body: Buffer) => void, reject: (err: unknown) => void): void {
  capturing!.resolve = resolve;
  capturing!.reject = reject;
}

function stopReading(req: Reading): BodyRead {
  const read = req[READING]!;
  req[READING] = undefined;
  req.off('data', onData);
  req.off('end', onEnd);
  req.off('error', onError);
  req.off('close', onClose);
  return read;
}

function onData(this: Reading, buf: Buffer): void {
  const read = this[READING]!;
  read.size += buf.length;
  if (read.size > read.limit) {
    stopReading(this);
    this.resume();
    read.reject(new BodyTooLarge(read.limit, read.declared, read.size));
    return;
  }
  read.chunks.push(buf);
}

function onEnd(this: Reading): void {
  const { chunks, size, resolve } = stopReading(this);
  resolve(chunks.length === 1 && chunks[0]!.length === size ? chunks[0]! : Buffer.concat(chunks, size));
}

function onError(this: Reading, err: Error): void {
  stopReading(this).reject(err);
}

/** A connection closed before the body ended (the client gave up). */
function onClose(this: Reading): void {
  stopReading(this).reject(new Error('request closed before its body ended'));
}

/**
 * Reads a request body up to `limit` bytes. Past the limit the read stops and
 * the caller answers 413 (the rest is drained and discarded, never buffered);
 * below it the raw bytes are kept as they arrived, because rejected input goes
 * to the dead-letter topic exactly as it was sent.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit) {
    req.resume();
    return Promise.reject(new BodyTooLarge(limit, declared, 0));
  }
  // Listeners rather than `for await`: the async iterator costs a promise and
  // a microtask per chunk, measurable on the token hook's per-request budget.
  const read = new BodyRead(limit, declared);
  capturing = read;
  const body = new Promise<Buffer>(capture);
  capturing = undefined;
  (req as Reading)[READING] = read;
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
  return body;
}

export function isTooLarge(err: unknown): err is BodyTooLarge {
  return err instanceof BodyTooLarge;
}

export type JsonTextResult =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly reason: 'invalid-utf8' | 'too-deep'; readonly detail: string };

/**
 * Turns a JSON body into text, refusing what must not be parsed:
 *
 * - Invalid UTF-8 is refused, not repaired. JSON is UTF-8 (RFC 8259 §8.1) and
 *   the service sends nothing else; decoding with U+FFFD replacements would
 *   store altered events and acknowledge them as if they were what was sent.
 *   The caller dead-letters the raw bytes, so nothing is lost.
 * - Nesting deeper than `maxDepth` is refused before parsing: JSON.parse copes
 *   with any depth, but JSON.stringify, validators and log serialisers recurse
 *   and overflow the stack near 5,000 levels. A LogEvent is about 8 deep.
 *
 * A leading byte-order mark is dropped (RFC 8259 allows ignoring it).
 */
export function jsonText(body: Buffer, maxDepth: number): JsonTextResult {
  if (!isUtf8(body)) return INVALID_UTF8;
  if (nestingExceeds(body, maxDepth)) return tooDeep(maxDepth);
  return decoded(body);
}

/**
 * `jsonText` without the depth check, for a caller that measures depth in a
 * scan of its own (event-hooks/delivery-scan.ts) and must refuse with
 * `tooDeep` before any recursive code sees the parsed value.
 */
export function utf8Text(body: Buffer): JsonTextResult {
  return isUtf8(body) ? decoded(body) : INVALID_UTF8;
}

/** The text of a body already checked to be UTF-8, a leading byte-order mark dropped. */
function decoded(body: Buffer): JsonTextResult {
  const bom = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf;
  return { ok: true, text: body.toString('utf8', bom ? 3 : 0) };
}

export const INVALID_UTF8: JsonTextResult & { ok: false } = {
  ok: false,
  reason: 'invalid-utf8',
  detail: 'body is not valid UTF-8',
};

export function tooDeep(maxDepth: number): JsonTextResult & { ok: false } {
  return { ok: false, reason: 'too-deep', detail: `JSON nested deeper than ${maxDepth} levels` };
}

/**
 * True when brackets nest deeper than `max` outside JSON strings. Iterative,
 * one pass over the bytes; bytes of multi-byte UTF-8 sequences are all >= 0x80
 * so they can never be taken for a bracket or a quote.
 *
 * Nesting deeper than `max` needs more than `max` opening brackets, and most
 * bodies (a token hook request has about 30) have far fewer: those are
 * counted first with native searches, about a tenth of the walk's cost.
 * Brackets inside strings count too; an over-count only means the walk runs.
 */
export function nestingExceeds(bytes: Uint8Array, max: number): boolean {
  if (!openingBracketsExceed(bytes, max)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

function openingBracketsExceed(bytes: Uint8Array, max: number): boolean {
  let n = 0;
  for (let i = bytes.indexOf(0x7b); i !== -1; i = bytes.indexOf(0x7b, i + 1)) if (++n > max) return true;
  for (let i = bytes.indexOf(0x5b); i !== -1; i = bytes.indexOf(0x5b, i + 1)) if (++n > max) return true;
  return false;
}
