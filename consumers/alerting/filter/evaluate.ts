/**
 * A parsed filter (platform/filter/parse.ts) → a predicate on a LogEvent, with the System Log
 * API's `filter` meaning (SCIM, RFC 7644 §3.4.2.2):
 *
 * - string comparisons are case-insensitive (SCIM: unless the attribute is
 *   caseExact, and no LogEvent attribute is);
 * - a path through a list (`target.displayName`) is multi-valued: an attribute
 *   operator holds when it holds for one value; `ne` is `not eq`, so it holds
 *   when no value equals (and when the attribute is absent);
 * - `pr`: present and not null, "" or empty;
 * - `gt ge lt le`: numerically when both sides are numbers, as instants when
 *   both are timestamps, else by text; an absent value compares false;
 * - non-string values compare by their JSON text: `isProxy eq "true"` holds
 *   for the boolean true, as it does in the System Log;
 * - `eq null` holds when the attribute is absent or null.
 *
 * Field paths resolve as everywhere in alerting (fields.ts): segments match
 * keys case- and `_`-insensitively, numeric segments are list positions.
 */
import { compilePath, visit, type FieldPath } from '../fields.js';
import { everyOf, needOne, someOf, withNeeds } from '../prefilter.js';
import type { Predicate } from '../sigma/detection.js';
import {
  parseFilter,
  resolveFilterPath,
  type CompareOp,
  type FilterNode,
  type Literal,
} from '../../../platform/filter/parse.js';

function text(v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

const ISO = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d/;

/** Ordering of a value against a literal: negative, zero, positive, or undefined when they do not compare. */
function order(v: unknown, lit: Literal): number | undefined {
  if (lit === null || v === null || v === undefined || typeof v === 'object') return undefined;
  if (typeof lit === 'number') {
    const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
    return Number.isNaN(n) ? undefined : n - lit;
  }
  const s = String(v);
  const l = String(lit);
  if (ISO.test(s) && ISO.test(l)) {
    const a = Date.parse(s);
    const b = Date.parse(l);
    if (Number.isFinite(a) && Number.isFinite(b)) return a - b;
  }
  const x = s.toLowerCase();
  const y = l.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
}

type Test = (v: unknown) => boolean;

function valueTest(cmp: CompareOp, lit: Literal): Test {
  if (lit === null) {
    if (cmp === 'eq') return (v) => v === null;
    throw new Error('unreachable');
  }
  const want = String(lit).toLowerCase();
  const lower = (v: unknown) => text(v)?.toLowerCase();
  switch (cmp) {
    case 'eq':
    case 'ne':
      return (v) => lower(v) === want;
    case 'co':
      return (v) => lower(v)?.includes(want) ?? false;
    case 'sw':
      return (v) => lower(v)?.startsWith(want) ?? false;
    case 'ew':
      return (v) => lower(v)?.endsWith(want) ?? false;
    case 'gt':
      return (v) => (order(v, lit) ?? NaN) > 0;
    case 'ge':
      return (v) => (order(v, lit) ?? NaN) >= 0;
    case 'lt':
      return (v) => (order(v, lit) ?? NaN) < 0;
    case 'le':
      return (v) => (order(v, lit) ?? NaN) <= 0;
  }
}

function any(segs: FieldPath, test: Test): Predicate {
  return (e) => visit(e, segs, test);
}

function present(v: unknown): boolean {
  if (v === null || v === undefined || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** One node of a parsed filter as a predicate (rules/explain.ts evaluates a tree node by node). */
export function compileFilterNode(node: FilterNode): Predicate {
  switch (node.op) {
    case 'and':
      return everyOf(node.items.map(compileFilterNode));
    case 'or':
      return someOf(node.items.map(compileFilterNode));
    case 'not': {
      const p = compileFilterNode(node.item);
      return (e) => !p(e);
    }
    case 'pr':
      return any(compilePath(resolveFilterPath(node.path)), present);
    case 'in': {
      const segs = compilePath(resolveFilterPath(node.path));
      const tests = node.values.filter((l) => l !== null).map((l) => valueTest('eq', l));
      const p = any(segs, (v) => tests.some((t) => t(v)));
      if (node.values.some((l) => l === null)) {
        // `in` holds when `eq` holds for one value, and `eq null` holds when the attribute is absent or null.
        const isPresent = any(segs, (v) => v !== null && v !== undefined);
        return (e) => p(e) || !isPresent(e);
      }
      // Which events can match at all (prefilter.ts): `eq` compares lower-cased text, as needText does.
      if (node.values.length === 0) return p;
      return withNeeds(
        p,
        needOne(
          segs,
          node.values.map((l) => String(l).toLowerCase()),
        ),
      );
    }
    case 'cmp': {
      const segs = compilePath(resolveFilterPath(node.path));
      if (node.value === null) {
        // `eq null`: absent or null; `ne null`: present. Other operators against null never hold.
        if (node.cmp === 'eq' || node.cmp === 'ne') {
          const isPresent = any(segs, (v) => v !== null && v !== undefined);
          return node.cmp === 'eq' ? (e) => !isPresent(e) : isPresent;
        }
        return () => false;
      }
      const p = any(segs, valueTest(node.cmp, node.value));
      if (node.cmp === 'ne') return (e) => !p(e);
      return node.cmp === 'eq' ? withNeeds(p, needOne(segs, [String(node.value).toLowerCase()])) : p;
    }
  }
}

/** Parses and compiles a filter expression. */
export function compileFilter(src: string): Predicate {
  return compileFilterNode(parseFilter(src));
}
