/**
 * Events built from a filter's own fields: a witness (an event the filter
 * matches, holding only what the filter names) and a near miss (the witness
 * with the filter's last positive condition broken). Used by the catalogue
 * conformance suite and by `hooklog rules lint` to check a filter can match at all.
 */
import { resolveFilterPath, type FilterNode, type Literal } from '../../../platform/filter/parse.js';

interface Constraint {
  readonly path: string;
  readonly node: FilterNode & { op: 'cmp' | 'in' | 'pr' };
  readonly positive: boolean;
}

/** The conditions an event must meet for the filter to hold, taking the first branch of each `or`. */
function constraints(node: FilterNode, positive: boolean, out: Constraint[]): void {
  switch (node.op) {
    case 'not':
      constraints(node.item, !positive, out);
      return;
    case 'and':
      if (positive) for (const i of node.items) constraints(i, true, out);
      else constraints(node.items[0]!, false, out);
      return;
    case 'or':
      if (positive) constraints(node.items[0]!, true, out);
      else for (const i of node.items) constraints(i, false, out);
      return;
    default:
      out.push({ path: resolveFilterPath(node.path), node, positive });
  }
}

function valueFor(node: Constraint['node']): unknown {
  if (node.op === 'pr') return 'present';
  if (node.op === 'in') return node.values.find((v) => v !== null) ?? null;
  const v: Literal = node.value;
  switch (node.cmp) {
    case 'eq':
    case 'co':
    case 'sw':
    case 'ew':
    case 'ge':
    case 'le':
      return v;
    case 'ne':
      return `not-${String(v)}`;
    case 'gt':
      return typeof v === 'number' ? v + 1 : `${String(v)}z`;
    case 'lt':
      return typeof v === 'number' ? v - 1 : '';
  }
}

/** Sets `path` in `obj`, creating objects, and arrays where a list is (target, numeric positions). */
export function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const segs = path.split('.');
  let cur: Record<string, unknown> | unknown[] = obj;
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i]!;
    const last = i === segs.length - 1;
    const nextIsPos = !last && /^\d+$/.test(segs[i + 1]!);
    const isList = nextIsPos || (i === 0 && seg.toLowerCase() === 'target');
    if (Array.isArray(cur)) {
      const idx = /^\d+$/.test(seg) ? Number(seg) : 0;
      while (cur.length <= idx) cur.push({});
      if (/^\d+$/.test(seg)) {
        if (last) cur[idx] = value;
        else cur = cur[idx] as Record<string, unknown>;
        continue;
      }
      cur = cur[idx] as Record<string, unknown>;
    }
    const o = cur as Record<string, unknown>;
    if (last) {
      o[seg] = value;
      return;
    }
    if (o[seg] === undefined || o[seg] === null || typeof o[seg] !== 'object') o[seg] = isList ? [] : {};
    cur = o[seg] as Record<string, unknown> | unknown[];
  }
}

export interface Witness {
  readonly fire: Record<string, unknown>;
  readonly miss: Record<string, unknown>;
}

/** An event the filter matches and one it must not, both built on `base`. */
export function witness(tree: FilterNode, base: Record<string, unknown>): Witness {
  const cs: Constraint[] = [];
  constraints(tree, true, cs);
  const fire = structuredClone(base);
  const set = new Set<string>();
  const text = new Map<string, string>();
  for (const c of cs.filter((x) => x.positive)) {
    let v = valueFor(c.node);
    // Two `co` on one attribute ("New Device=POSITIVE" and "New IP=POSITIVE"): one value holding both.
    const prev = text.get(c.path.toLowerCase());
    if (prev !== undefined && typeof v === 'string' && c.node.op === 'cmp' && c.node.cmp === 'co') v = `${prev}, ${v}`;
    if (typeof v === 'string') text.set(c.path.toLowerCase(), v);
    setPath(fire, c.path, v);
    set.add(c.path.toLowerCase());
  }
  // Negative conditions on paths nobody set hold by absence; `ne` needs the value.
  for (const c of cs.filter((x) => !x.positive)) {
    if (c.node.op === 'cmp' && c.node.cmp === 'ne' && !set.has(c.path.toLowerCase()))
      setPath(fire, c.path, c.node.value);
  }
  // The near miss breaks one condition the filter requires outright: the last attribute test
  // that is the filter itself or one of its top-level `and` terms.
  const required = (tree.op === 'and' ? tree.items : [tree]).filter(
    (n): n is Constraint['node'] =>
      (n.op === 'cmp' && n.cmp !== 'ne' && n.value !== null) || n.op === 'in' || n.op === 'pr',
  );
  const breakIt = required[required.length - 1];
  const miss = structuredClone(fire);
  if (breakIt) setPath(miss, resolveFilterPath(breakIt.path), breakIt.op === 'pr' ? null : 'hooklog-near-miss');
  return { fire, miss };
}
