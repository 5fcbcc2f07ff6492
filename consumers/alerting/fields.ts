/**
 * Field paths in rules → values in a LogEvent.
 *
 * Rules are written by others in several spellings of the same field:
 * Sigma's Okta rules say `eventType`, `displayMessage`, `target.displayName`,
 * older ones `eventtype`, `okta.debug_context.debug_data.factor`; Panther's
 * test events carry lower-cased keys. So a path segment matches an object key
 * when both are equal after lower-casing and dropping `_` (the "normal form"),
 * a leading `okta.` is dropped, and a few ECS names are aliased (`action` →
 * `eventType`). Arrays are traversed: `target.displayName` yields the
 * displayName of every target, and a predicate holds when any value matches.
 */

/** ECS / legacy names used by published rules, in normal form → LogEvent path. */
const ALIASES: Readonly<Record<string, string>> = {
  action: 'eventType',
  'event.action': 'eventType',
  'event.outcome': 'outcome.result',
  'source.ip': 'client.ipAddress',
  'user.name': 'actor.alternateId',
};

/** Lower-case without `_`: the form in which a rule's segment and an event's key are compared. */
export function normalKey(s: string): string {
  return s.toLowerCase().replaceAll('_', '');
}

/** A compiled path: normal-form segments, with the rule's own spelling kept for a direct lookup first. */
export type FieldPath = readonly string[] & { readonly raw?: readonly string[] };

/** Splits and normalises a rule's field path once, at compile time. */
export function compilePath(path: string): FieldPath {
  let p = path.trim();
  if (/^okta\./i.test(p)) p = p.slice(5);
  const alias = ALIASES[p.toLowerCase()];
  if (alias) p = alias;
  const raw = p.split('.');
  return Object.assign(raw.map(normalKey), { raw });
}

/**
 * Every value at `segs` in `root`, arrays flattened. Missing paths yield [];
 * `null` leaves are returned as null so "field is null" can be tested.
 * A numeric segment indexes an array (`target.0` is the first target); a path
 * that continues into a string holding JSON parses it. A `*` segment matches
 * every key (enrichment maps keyed by IP); a key that
 * itself contains dots (Panther's `p_enrichment.ipinfo_location["client.ipAddress"]`)
 * is matched by joining the following segments.
 */
export function resolve(root: unknown, segs: FieldPath): unknown[] {
  const out: unknown[] = [];
  visit(root, segs, (v) => {
    out.push(v);
    return false;
  });
  return out;
}

/**
 * Calls `fn` with each value at `segs` until it returns true; returns whether
 * it did. The allocation-free form of `resolve(...).some(fn)`: every rule
 * runs this on every event, and garbage was the engine's main cost.
 */
export function visit(root: unknown, segs: FieldPath, fn: (v: unknown) => boolean): boolean {
  return walk(root, segs, 0, fn);
}

/**
 * Normal form → actual key, built once per object and cached: an event is
 * evaluated by every rule, so each of its objects is indexed once, not once
 * per rule and path segment. The engine takes one event at a time through
 * all its rules, so the last few objects indexed are the ones asked for
 * again: a small ring compared by identity, not a WeakMap (an entry per
 * event for the collector to process as an ephemeron, 100k a second).
 */
const RING = 16;
const ringObjs: (object | undefined)[] = new Array<object | undefined>(RING).fill(undefined);
const ringIdx: (Map<string, string> | undefined)[] = new Array<Map<string, string> | undefined>(RING).fill(undefined);
let ringNext = 0;
/**
 * Key → normal form, remembered: events repeat the same few dozen keys, and
 * lower-casing them afresh for each event's index was most of its cost (a
 * rule naming a field most events lack indexes every event). Bounded, as
 * keys can be data too (enrichment maps keyed by IP).
 */
const normalForms = new Map<string, string>();
const NORMAL_FORMS_MAX = 10_000;
function normalKeyOf(k: string): string {
  let n = normalForms.get(k);
  if (n === undefined) {
    if (normalForms.size >= NORMAL_FORMS_MAX) normalForms.clear();
    n = normalKey(k);
    normalForms.set(k, n);
  }
  return n;
}
/**
 * Indexes by key order: events from one source share their keys in one order
 * (a LogEvent has a fixed schema), and an index depends on nothing else, so
 * the one built for an event serves the next after a key-by-key comparison.
 */
const SHAPES = 4;
const shapeKeys: string[][] = [];
const shapeIdx: Map<string, string>[] = [];
let shapeNext = 0;
function indexByShape(obj: Record<string, unknown>): Map<string, string> {
  for (let s = 0; s < shapeKeys.length; s++) {
    const keys = shapeKeys[s]!;
    let i = 0;
    let same = true;
    for (const k in obj) {
      if (keys[i] !== k) {
        same = false;
        break;
      }
      i++;
    }
    if (same && i === keys.length) return shapeIdx[s]!;
  }
  const keys: string[] = [];
  const idx = new Map<string, string>();
  for (const k in obj) {
    keys.push(k);
    const n = normalKeyOf(k);
    if (!idx.has(n)) idx.set(n, k);
  }
  shapeKeys[shapeNext] = keys;
  shapeIdx[shapeNext] = idx;
  shapeNext = (shapeNext + 1) % SHAPES;
  return idx;
}
function keyIndex(obj: Record<string, unknown>): Map<string, string> {
  for (let i = 0; i < RING; i++) if (ringObjs[i] === obj) return ringIdx[i]!;
  const idx = indexByShape(obj);
  ringObjs[ringNext] = obj;
  ringIdx[ringNext] = idx;
  ringNext = (ringNext + 1) % RING;
  return idx;
}

/** Last few JSON strings parsed (an event is evaluated by every rule; the same string is read again). */
const parsedJson = new Map<string, unknown>();
const PARSED_JSON_MAX = 64;
function parseJsonString(s: string): unknown {
  if (parsedJson.has(s)) return parsedJson.get(s);
  let v: unknown;
  try {
    v = JSON.parse(s);
  } catch {
    v = undefined;
  }
  if (parsedJson.size >= PARSED_JSON_MAX) parsedJson.delete(parsedJson.keys().next().value!);
  parsedJson.set(s, v);
  return v;
}

function walk(v: unknown, segs: FieldPath, i: number, fn: (v: unknown) => boolean): boolean {
  if (i === segs.length) {
    if (!Array.isArray(v)) return fn(v);
    for (const x of v) if (fn(x)) return true;
    return false;
  }
  if (Array.isArray(v)) {
    // A numeric segment is a position (`target.0.displayName`: the first target), not a key.
    if (/^\d+$/.test(segs[i]!)) return walk(v[Number(segs[i])], segs, i + 1, fn);
    for (const item of v) if (item && typeof item === 'object' && walk(item, segs, i, fn)) return true;
    return false;
  }
  // A path that goes on into a string reads the string as JSON: the service puts whole
  // policies in strings (`changeDetails.to.policyRuleActionJson.appSignOn...`).
  if (typeof v === 'string')
    return v.length > 1 && (v[0] === '{' || v[0] === '[') ? walk(parseJsonString(v), segs, i, fn) : false;
  if (!v || typeof v !== 'object') return false;
  const obj = v as Record<string, unknown>;
  const seg = segs[i]!;
  if (seg === '*') {
    for (const k in obj) if (walk(obj[k], segs, i + 1, fn)) return true;
    return false;
  }
  // The rule's own spelling usually is the event's: a plain property read, no index.
  const direct = segs.raw?.[i];
  if (direct !== undefined && Object.hasOwn(obj, direct)) return walk(obj[direct], segs, i + 1, fn);
  const idx = keyIndex(obj);
  const real = idx.get(seg);
  if (real !== undefined) return walk(obj[real], segs, i + 1, fn);
  // Dotted key: try "seg.next", "seg.next.next2"...
  let joined = seg;
  for (let j = i + 1; j < segs.length && j < i + 4; j++) {
    joined += `.${segs[j]}`;
    const k = idx.get(joined);
    if (k !== undefined) return walk(obj[k], segs, j + 1, fn);
  }
  return false;
}

/** First scalar value at a path, as a string ('' when absent): for group keys. */
export function firstString(root: unknown, segs: FieldPath): string {
  let out = '';
  visit(root, segs, (v) => {
    if (v === null || typeof v === 'object') return false;
    out = String(v);
    return true;
  });
  return out;
}
