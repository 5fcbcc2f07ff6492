/**
 * Why a rule's detection held or not for one event: its condition as a tree
 * (all_of, any_of, not), each leaf with the value the event had there and
 * whether the leaf held. `hooklog rules test --cases` prints it for a case
 * that fails, so the author sees which condition was false and what it saw,
 * not only that no alert came.
 *
 * Each leaf is compiled by the same code as the rule (a filter node by
 * filter/evaluate.ts, a Sigma field by sigma/detection.ts), so the tree
 * agrees with the rule's own predicate. Values come from the event
 * (attacker-chosen): every one is bounded and its invisible characters shown
 * as escapes before it is printed.
 */
import { compilePath, resolve } from '../fields.js';
import { compileFilterNode } from '../filter/evaluate.js';
import { parseFilter, resolveFilterPath, type FilterNode, type Literal } from '../../../platform/filter/parse.js';
import { expandPattern, parseCondition, type ConditionNode } from '../sigma/condition.js';
import { compileDetection, type DetectionOptions } from '../sigma/detection.js';

export type Explained =
  | { readonly op: 'all_of' | 'any_of'; readonly ok: boolean; readonly label?: string; readonly items: Explained[] }
  | { readonly op: 'not'; readonly ok: boolean; readonly label?: string; readonly item: Explained }
  | {
      readonly op: 'leaf';
      readonly ok: boolean;
      readonly label?: string;
      readonly test: string;
      readonly seen: string;
    };

/** A leaf's value as shown: at most this many characters. */
const VALUE_CHARS = 60;
/** A whole explanation as shown: at most this many characters. */
const TREE_CHARS = 2000;

/** Bounded, on one line, with control and invisible characters (zero-width, bidi controls) as escapes. */
export function shownValue(v: unknown, max = VALUE_CHARS): string {
  const s = (typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v))).replace(
    /[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/** What an event holds at a path: its value, its values, or `absent`. */
function seenAt(event: unknown, path: string): string {
  const vs = resolve(event, compilePath(path)).filter((v) => v !== undefined);
  if (vs.length === 0) return 'absent';
  return shownValue(vs.length === 1 ? vs[0] : vs);
}

const lit = (l: Literal) => (typeof l === 'string' ? `'${shownValue(l, VALUE_CHARS).slice(1, -1)}'` : String(l));

function filterTree(node: FilterNode, event: unknown): Explained {
  const ok = compileFilterNode(node)(event);
  switch (node.op) {
    case 'and':
    case 'or':
      return { op: node.op === 'and' ? 'all_of' : 'any_of', ok, items: node.items.map((n) => filterTree(n, event)) };
    case 'not':
      return { op: 'not', ok, item: filterTree(node.item, event) };
    case 'pr':
      return { op: 'leaf', ok, test: `${node.path} pr`, seen: seenAt(event, resolveFilterPath(node.path)) };
    case 'in':
      return {
        op: 'leaf',
        ok,
        test: `${node.path} in [${node.values.map(lit).join(', ')}]`,
        seen: seenAt(event, resolveFilterPath(node.path)),
      };
    case 'cmp':
      return {
        op: 'leaf',
        ok,
        test: `${node.path} ${node.cmp} ${lit(node.value)}`,
        seen: seenAt(event, resolveFilterPath(node.path)),
      };
  }
}

/** One Sigma selection: a map ANDs its fields, a list of maps ORs them, a list of strings is keywords. */
function selectionTree(name: string, sel: unknown, opts: DetectionOptions, event: unknown): Explained {
  const one = (key: string, value: unknown): Explained => {
    const p = compileDetection({ s: { [key]: value }, condition: 's' }, opts, `selection ${name}`);
    const shown = Array.isArray(value) ? value.map((v) => shownValue(v, 40)).join(' or ') : shownValue(value, 40);
    return { op: 'leaf', ok: p(event), test: `${key}: ${shown}`, seen: seenAt(event, key.split('|')[0]!) };
  };
  const map = (m: Record<string, unknown>): Explained => {
    const items = Object.entries(m).map(([k, v]) => one(k, v));
    return items.length === 1 ? items[0]! : { op: 'all_of', ok: items.every((i) => i.ok), items };
  };
  let out: Explained;
  if (Array.isArray(sel) && sel.every((s) => s !== null && typeof s === 'object')) {
    const items = (sel as Record<string, unknown>[]).map(map);
    out = { op: 'any_of', ok: items.some((i) => i.ok), items };
  } else if (Array.isArray(sel)) {
    const p = compileDetection({ s: sel, condition: 's' }, opts, `selection ${name}`);
    out = {
      op: 'leaf',
      ok: p(event),
      test: `keywords ${sel.map((s) => shownValue(s, 40)).join(' or ')}`,
      seen: '(anywhere in the event)',
    };
  } else out = map(sel as Record<string, unknown>);
  return { ...out, label: name };
}

function conditionTree(
  node: ConditionNode,
  sels: Readonly<Record<string, unknown>>,
  opts: DetectionOptions,
  event: unknown,
): Explained {
  switch (node.op) {
    case 'ref':
      return selectionTree(node.name, sels[node.name], opts, event);
    case 'not': {
      const item = conditionTree(node.item, sels, opts, event);
      return { op: 'not', ok: !item.ok, item };
    }
    case 'and':
    case 'or': {
      const items = node.items.map((n) => conditionTree(n, sels, opts, event));
      const ok = node.op === 'and' ? items.every((i) => i.ok) : items.some((i) => i.ok);
      return { op: node.op === 'and' ? 'all_of' : 'any_of', ok, items };
    }
    case 'of': {
      const names = expandPattern(node.pattern, Object.keys(sels));
      const items = names.map((n) => selectionTree(n, sels[n], opts, event));
      const ok = node.quantifier === 'all' ? items.every((i) => i.ok) : items.some((i) => i.ok);
      return { op: node.quantifier === 'all' ? 'all_of' : 'any_of', ok, items };
    }
  }
}

/** A detection (filter text or Sigma selections) as an explainer: compiled once, run per event. */
export function explainer(
  detection: string | Record<string, unknown>,
  opts: DetectionOptions,
): (event: unknown) => Explained {
  if (typeof detection === 'string') {
    const tree = parseFilter(detection);
    return (event) => filterTree(tree, event);
  }
  const sels = Object.fromEntries(
    Object.entries(detection).filter(([k]) => k !== 'condition' && k !== 'timeframe'),
  ) as Record<string, unknown>;
  const conds = (Array.isArray(detection['condition']) ? detection['condition'] : [detection['condition']]).map((c) =>
    parseCondition(String(c)),
  );
  return (event) => {
    const items = conds.map((c) => conditionTree(c, sels, opts, event));
    return items.length === 1 ? items[0]! : { op: 'any_of', ok: items.some((i) => i.ok), items };
  };
}

/** A condition over named values (a rule's `when`) as a leaf: the values it read, and whether it held. */
export function whenLeaf(text: string, ok: boolean, values: Readonly<Record<string, unknown>>): Explained {
  // Times matter where a previous event is compared (speed, gaps): then both are shown, as instants.
  const times = 'prev.time' in values;
  const shown = (k: string, v: unknown) =>
    k.endsWith('time') && typeof v === 'number' && Number.isFinite(v) ? new Date(v).toISOString() : shownValue(v, 40);
  const seen = Object.entries(values)
    .filter(([k]) => (times || k !== 'time') && !k.includes('$'))
    .map(([k, v]) => `${k}=${shown(k, v)}`)
    .join(', ');
  return { op: 'leaf', ok, test: `when ${shownValue(text, 120).slice(1, -1)}`, seen: seen || 'no fields' };
}

/** Combines explainers (a sequence's steps, a detection and its `when`): all must hold, each labelled. */
export function allOf(parts: readonly Explained[]): Explained {
  // An unlabelled all_of inside is the same condition one level up: one tree reads easier than nested ones.
  const items = parts.flatMap((p) => (p.op === 'all_of' && !p.label ? p.items : [p]));
  return items.length === 1 ? items[0]! : { op: 'all_of', ok: items.every((p) => p.ok), items };
}

/** `all_of[ outcome.result eq 'FAILURE' → "SUCCESS" ✗, … ]`, bounded. */
export function renderExplained(x: Explained): string {
  const go = (n: Explained): string => {
    const label = n.label ? `${n.label}: ` : '';
    switch (n.op) {
      case 'leaf':
        return `${label}${n.test} → ${n.seen} ${n.ok ? '✓' : '✗'}`;
      case 'not':
        return `${label}not[ ${go(n.item)} ] ${n.ok ? '✓' : '✗'}`;
      default:
        return `${label}${n.op}[ ${n.items.map(go).join(', ')} ]`;
    }
  };
  const s = go(x);
  return s.length <= TREE_CHARS ? s : `${s.slice(0, TREE_CHARS - 1)}…`;
}
