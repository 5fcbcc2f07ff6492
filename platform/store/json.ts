/**
 * Tolerant readers for stream record values, shared by every row mapping the
 * sink runs (events here, legacy events and token decisions in their own
 * folders): any field may be null, absent or of an unexpected type, and a
 * mapping must degrade to an empty value rather than throw.
 */
export type Obj = Record<string, unknown>;

/** `v` when it is a plain JSON object, else an empty one. */
export function obj(v: unknown): Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}

/** The JSON objects in `v` when it is an array (other members skipped), else none. */
export function objects(v: unknown): Obj[] {
  return Array.isArray(v) ? v.filter((x) => x !== null && typeof x === 'object' && !Array.isArray(x)).map(obj) : [];
}

/** Strings as they are, finite numbers and booleans as text, anything else empty. */
export function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean' || typeof v === 'bigint')
    return String(v);
  return '';
}

/** Like `str`, but null where `str` would give '' for want of a scalar: absent, null, object, array. */
export function strOrNull(v: unknown): string | null {
  const s = str(v);
  return s === '' && typeof v !== 'string' ? null : s;
}

/** A finite number, from a number or a numeric string; null otherwise. */
export function num(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export type ParsedObject =
  { readonly ok: true; readonly raw: string; readonly value: Obj } | { readonly ok: false; readonly reason: string };

/**
 * A record value that must be one JSON object. Not valid UTF-8 is refused too:
 * such bytes cannot be kept exactly in the raw column, only in the dead letter.
 */
export function parseObject(value: Buffer): ParsedObject {
  let raw: string;
  try {
    raw = strictUtf8.decode(value);
  } catch {
    return { ok: false, reason: 'value is not valid UTF-8' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { ok: false, reason: 'value is not valid JSON' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return { ok: false, reason: 'value is not a JSON object' };
  return { ok: true, raw, value: parsed as Obj };
}
