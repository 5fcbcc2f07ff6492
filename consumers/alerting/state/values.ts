/** Named values of an event (a rule's `fields`), as expression values. */
import { visit, type FieldPath } from '../fields.js';
import type { Value } from './expr.js';

/** The first scalar at a path (null when absent): numbers stay numbers, booleans booleans. */
export function firstValue(root: unknown, segs: FieldPath): Value {
  let out: Value = null;
  visit(root, segs, (v) => {
    if (v === null || v === undefined || typeof v === 'object') return false;
    out = typeof v === 'number' || typeof v === 'boolean' ? v : String(v);
    return true;
  });
  return out;
}

export function readFields(
  fields: readonly (readonly [string, FieldPath])[],
  event: unknown,
  timeMs: number | null,
): Record<string, Value> {
  const out: Record<string, Value> = { time: timeMs };
  for (const [name, path] of fields) out[name] = firstValue(event, path);
  return out;
}

/**
 * Event time for a stateless `when` (the engine passes its own to stateful rules):
 * `published` as the consumer reads it (a space for T and a missing zone tolerated), else null.
 */
export function eventTime(event: unknown): number | null {
  const p = (event as { published?: unknown } | null)?.published;
  if (typeof p !== 'string') return null;
  let s = p.trim().replace(' ', 'T');
  if (!/(Z|[+-]\d\d:?\d\d)$/.test(s)) s += 'Z';
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : null;
}
