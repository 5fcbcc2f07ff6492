/**
 * JSON.parse's verdict on a record value, and where in its bytes each value the events row reads sits,
 * in one pass and without building any object.
 *
 * Why: decoding a 1.6 KB event to a string and JSON.parse building all of it (most of which no column
 * reads) was, with encoding the row again, the sink's JavaScript cost per event. The scan accepts exactly
 * what strict UTF-8 decoding plus JSON.parse accept (RFC 8259: any depth, duplicate keys, lone surrogate
 * escapes) and records, per leaf of `LEAVES`, the kind of the value there and its token's byte range, so
 * event-tsv.ts can copy the bytes into the insert. What it records agrees with the parsed value:
 * - a key given twice counts by its last occurrence, and a repeated object replaces the earlier one
 *   whole (its leaves are cleared first);
 * - keys are compared after unescaping (`"uu\u0069d"` is `uuid`);
 * - where an object is expected and something else sits, its leaves stay absent (rows.ts's `obj()`);
 * - the lists (`target`, `request.ipChain`) keep their object elements only, in order.
 * event-tsv.test.ts checks all of it against JSON.parse and rows.ts on fixtures, edge cases and 4,000
 * seeded corruptions. The tokens themselves are read by platform/json/lexer.ts, shared with the event
 * hooks' delivery reader.
 */
import { isUtf8 } from 'node:buffer';
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
  breaks,
  buf,
  end,
  escaped,
  escapes,
  finish,
  lastKind,
  skipScalar,
  skipString,
  skipValue,
  space,
  unescaped,
} from '../../platform/json/lexer.js';

export { Kind };

/** Leaves of the event, by index into the slots (three Int32s each: kind, token start, token end). */
export const LEAVES = [
  'uuid',
  'published',
  'eventType',
  'version',
  'severity',
  'displayMessage',
  'legacyEventType',
  'actor.id',
  'actor.type',
  'actor.alternateId',
  'actor.displayName',
  'client.ipAddress',
  'client.zone',
  'client.device',
  'client.userAgent.rawUserAgent',
  'client.userAgent.browser',
  'client.userAgent.os',
  'client.geographicalContext.country',
  'client.geographicalContext.state',
  'client.geographicalContext.city',
  'client.geographicalContext.postalCode',
  'client.geographicalContext.geolocation.lat',
  'client.geographicalContext.geolocation.lon',
  'securityContext.asNumber',
  'securityContext.asOrg',
  'securityContext.isProxy',
  'outcome.result',
  'outcome.reason',
  'transaction.id',
  'transaction.type',
  'authenticationContext.externalSessionId',
  'authenticationContext.rootSessionId',
] as const;
export type Leaf = (typeof LEAVES)[number];
export const leaf = (name: Leaf): number => LEAVES.indexOf(name);

/** Leaves of one `target` element, and of one `request.ipChain` hop, relative to the element's slot block. */
export const TARGET_LEAVES = ['id', 'type', 'alternateId', 'displayName'] as const;
const HOP_LEAVES = ['ip'] as const;

/** One object of the event on the paths: its keys, each a leaf, an object, or a list of objects. */
interface Node {
  /** Slot range of the leaves under this object (cleared when it is seen again). */
  readonly from: number;
  readonly to: number;
  /** Members by `keyCode` of their name's bytes (length, first and last byte): one probe per key read. */
  readonly byCode: ReadonlyMap<number, readonly Member[]>;
  readonly byName: ReadonlyMap<string, Member>;
  /** Lists under this object (reset when it is seen again). */
  readonly lists: readonly ListId[];
}
type ListId = 0 | 1; // 0 target, 1 request.ipChain
/**
 * One key of a node: a leaf (its index), an object (its node) or a list (its id and element node). One
 * shape for all, so the scan's property reads stay monomorphic.
 */
interface Member {
  readonly bytes: Buffer;
  readonly leaf: number;
  readonly node: Node | null;
  readonly list: ListId | -1;
  readonly element: Node | null;
}
const member = (bytes: Buffer, over: Partial<Member>): Member => ({
  bytes,
  leaf: -1,
  node: null,
  list: -1,
  element: null,
  ...over,
});

function node(
  prefix: string,
  names: readonly string[],
  nested: Record<string, Node> = {},
  lists: Record<string, [ListId, Node]> = {},
): Node {
  const members = new Map<string, Member>();
  const leaves: number[] = [];
  for (const name of names) {
    const index =
      prefix === '@' ? (names as readonly string[]).indexOf(name) : LEAVES.indexOf(`${prefix}${name}` as Leaf);
    leaves.push(index);
    members.set(name, member(Buffer.from(name), { leaf: index }));
  }
  let from = leaves.length > 0 ? Math.min(...leaves) : Infinity;
  let to = leaves.length > 0 ? Math.max(...leaves) + 1 : -Infinity;
  for (const [name, child] of Object.entries(nested)) {
    members.set(name, member(Buffer.from(name), { node: child }));
    from = Math.min(from, child.from);
    to = Math.max(to, child.to);
  }
  const listIds: ListId[] = [...Object.values(nested).flatMap((c) => c.lists)];
  for (const [name, [list, element]] of Object.entries(lists)) {
    members.set(name, member(Buffer.from(name), { list, element }));
    listIds.push(list);
  }
  const byCode = new Map<number, Member[]>();
  for (const m of members.values()) {
    const code = keyCode(m.bytes, 0, m.bytes.length);
    byCode.set(code, [...(byCode.get(code) ?? []), m]);
  }
  return {
    from: Number.isFinite(from) ? from : 0,
    to: Number.isFinite(to) ? to : 0,
    byCode,
    byName: members,
    lists: listIds,
  };
}

const TARGET = node('@', TARGET_LEAVES);
const HOP = node('@', HOP_LEAVES);
const ROOT = node(
  '',
  ['uuid', 'published', 'eventType', 'version', 'severity', 'displayMessage', 'legacyEventType'],
  {
    actor: node('actor.', ['id', 'type', 'alternateId', 'displayName']),
    client: node('client.', ['ipAddress', 'zone', 'device'], {
      userAgent: node('client.userAgent.', ['rawUserAgent', 'browser', 'os']),
      geographicalContext: node('client.geographicalContext.', ['country', 'state', 'city', 'postalCode'], {
        geolocation: node('client.geographicalContext.geolocation.', ['lat', 'lon']),
      }),
    }),
    securityContext: node('securityContext.', ['asNumber', 'asOrg', 'isProxy']),
    outcome: node('outcome.', ['result', 'reason']),
    transaction: node('transaction.', ['id', 'type']),
    authenticationContext: node('authenticationContext.', ['externalSessionId', 'rootSessionId']),
    request: node('request.', [], {}, { ipChain: [1, HOP] }),
  },
  { target: [0, TARGET] },
);

const ROOT_INTS = LEAVES.length * 3;
export const TARGET_INTS = TARGET_LEAVES.length * 3;
const HOP_INTS = HOP_LEAVES.length * 3;

/** The result of one scan; reused for the next (read it before scanning again). */
export interface Scanned {
  /** Kind, start, end per leaf of LEAVES. */
  readonly slots: Int32Array;
  /** `target`'s object elements: TARGET_INTS ints each, `targets` of them. */
  readonly targetSlots: Int32Array;
  readonly targets: number;
  /** `request.ipChain`'s object elements: their `ip` leaf, three ints each. */
  readonly hopSlots: Int32Array;
  readonly hops: number;
  /** A backslash, tab, line feed or carriage return is in the value: as a TSV field it needs escaping. */
  readonly needsEscape: boolean;
}

export type ScanResult =
  { readonly ok: true; readonly scan: Scanned } | { readonly ok: false; readonly reason: string };

const NOT_UTF8 = { ok: false, reason: 'value is not valid UTF-8' } as const;
const NOT_JSON = { ok: false, reason: 'value is not valid JSON' } as const;
const NOT_OBJECT = { ok: false, reason: 'value is not a JSON object' } as const;

/** The scan's results, module state like the lexer's (this is the sink's hottest loop). */
const slots = new Int32Array(ROOT_INTS);
const lists: [Int32Array, Int32Array] = [new Int32Array(TARGET_INTS * 16), new Int32Array(HOP_INTS * 16)];
const counts = [0, 0];
const LIST_INTS = [TARGET_INTS, HOP_INTS] as const;

/** A key's bytes [from, to) reduced to one number: its length, first and last byte. */
function keyCode(b: Uint8Array, from: number, to: number): number {
  const n = to - from;
  return n === 0 ? 0 : n * 65536 + b[from]! * 256 + b[to - 1]!;
}

/** The member of `node` the key at `p` names (undefined: not kept); `keyEnd` is past the key's closing quote. */
let keyEnd = 0;
function memberAt(node: Node, p: number): Member | undefined {
  if (buf[p] !== QUOTE) throw INVALID;
  keyEnd = skipString(p);
  if (escaped) return node.byName.get(unescaped(p, keyEnd));
  const candidates = node.byCode.get(keyCode(buf, p + 1, keyEnd - 1));
  if (candidates === undefined) return undefined;
  const b = buf;
  for (const m of candidates) {
    // A loop, not Buffer#compare, whose argument checks cost more than comparing a short key.
    const k = m.bytes;
    let j = 0;
    if (k.length !== keyEnd - p - 2) continue;
    while (j < k.length && b[p + 1 + j] === k[j]) j++;
    if (j === k.length) return m;
  }
  return undefined;
}

/** Reads the object at `p` (its `{`) into `dst` from int `base`; past its `}`. */
function readObject(n: Node, p: number, dst: Int32Array, base: number): number {
  p = space(p + 1);
  if (buf[p] === CLOSE_OBJECT) return p + 1;
  for (;;) {
    const m = memberAt(n, p);
    p = space(keyEnd);
    if (buf[p] !== COLON) throw INVALID;
    p = space(p + 1);
    if (m === undefined) p = skipValue(p);
    else if (m.leaf >= 0) {
      const at = base + m.leaf * 3;
      const c = buf[p];
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        dst[at] = c === OPEN_OBJECT ? Kind.OBJECT : Kind.ARRAY;
        dst[at + 1] = p;
        p = skipValue(p);
      } else {
        dst[at + 1] = p;
        p = skipScalar(p);
        dst[at] = lastKind;
      }
      dst[at + 2] = p;
    } else if (m.node !== null) {
      // Seen again: the later value replaces the earlier one whole.
      const child = m.node;
      dst.fill(0, base + child.from * 3, base + child.to * 3);
      for (const l of child.lists) counts[l] = 0;
      p = buf[p] === OPEN_OBJECT ? readObject(child, p, dst, base) : skipValue(p);
    } else {
      const list = m.list as ListId;
      counts[list] = 0;
      p = buf[p] === OPEN_ARRAY ? readList(list, m.element!, p) : skipValue(p);
    }
    p = space(p);
    const d = buf[p];
    if (d === CLOSE_OBJECT) return p + 1;
    if (d !== COMMA) throw INVALID;
    p = space(p + 1);
  }
}

/** Reads the array at `p` into list `l`, keeping its object elements; past its `]`. */
function readList(l: ListId, element: Node, p: number): number {
  p = space(p + 1);
  if (buf[p] === CLOSE_ARRAY) return p + 1;
  const ints = LIST_INTS[l];
  for (;;) {
    if (buf[p] === OPEN_OBJECT) {
      let dst = lists[l];
      const base = counts[l]! * ints;
      if (base + ints > dst.length) {
        const bigger = new Int32Array(dst.length * 2);
        bigger.set(dst);
        dst = lists[l] = bigger;
      }
      dst.fill(0, base, base + ints);
      p = readObject(element, p, dst, base);
      counts[l]!++;
    } else p = skipValue(p);
    p = space(p);
    const d = buf[p];
    if (d === CLOSE_ARRAY) return p + 1;
    if (d !== COMMA) throw INVALID;
    p = space(p + 1);
  }
}

const result: Scanned = {
  get slots() {
    return slots;
  },
  get targetSlots() {
    return lists[0];
  },
  get targets() {
    return counts[0]!;
  },
  get hopSlots() {
    return lists[1];
  },
  get hops() {
    return counts[1]!;
  },
  // Outside strings only whitespace can be a tab, LF or CR, and a backslash only inside one, as an escape.
  get needsEscape() {
    return escapes || breaks;
  },
};
const OK: ScanResult = { ok: true, scan: result };

/**
 * Scans one record value. Not UTF-8, not JSON, or not an object is refused with rows.ts's reasons, in the
 * order decoding then parsing would find them. The result is valid until the next scan.
 */
export function scanEvent(value: Uint8Array): ScanResult {
  if (!isUtf8(value)) return NOT_UTF8;
  begin(value);
  slots.fill(0);
  counts[0] = counts[1] = 0;
  try {
    let p = space(0);
    if (buf[p] !== OPEN_OBJECT) return space(skipValue(p)) === end ? NOT_OBJECT : NOT_JSON;
    p = space(readObject(ROOT, p, slots, 0));
    return p === end ? OK : NOT_JSON;
  } catch (err) {
    if (err === INVALID || err instanceof SyntaxError) return NOT_JSON;
    throw err;
  } finally {
    finish();
  }
}
