/**
 * Sigma detection → predicate on a LogEvent. A selection that is a map ANDs
 * its fields; a list of maps ORs them; a list of strings is keywords (any
 * appears anywhere in the event). A field's list of values ORs them unless
 * `|all`. Strings compare case-insensitively (Sigma's default), `*` and `?`
 * are wildcards in plain values; `re` is a case-sensitive regular expression.
 * `null` matches a field that is absent or null (on a list: no element has a
 * value); `''` matches an empty string. `|expand` resolves
 * `%placeholder%` from configuration; an unresolved placeholder matches
 * nothing (so a filter built on it excludes nothing — the rule still fires).
 * `fieldref` compares with another field of the same event.
 */
import { AlertingError } from '../errors.js';
import { compilePath, resolve, visit } from '../fields.js';
import { everyOf, needOne, someOf, withNeeds } from '../prefilter.js';
import { expandPattern, parseCondition, type ConditionNode } from './condition.js';
import type { IpListLookup } from '../../../platform/iplists/lists.js';
import { linearRegex } from '../../../platform/regex.js';

export type Predicate = (event: unknown) => boolean;
type Matcher = (value: unknown) => boolean;

export interface DetectionOptions {
  /** Values for `%name%` placeholders used with `|expand`. */
  readonly placeholders?: Readonly<Record<string, readonly string[]>>;
  /** The IP lists a filter's `in list("name")` tests; a name not here fails the rule. */
  readonly lists?: IpListLookup;
}

const RESERVED = new Set(['condition', 'timeframe']);
const MODIFIERS = new Set(['contains', 'startswith', 'endswith', 're', 'all', 'expand', 'cased', 'exists', 'fieldref']);

function escapeRe(s: string): string {
  return s.replace(/[.+^${}()|[\]\\]/g, '\\$&');
}

/** Sigma plain value with `*`/`?` wildcards (`\*` escapes) → anchored, case-insensitive regexp. */
function wildcardRe(value: string, prefix: string, suffix: string, cased: boolean): RegExp {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '\\' && (value[i + 1] === '*' || value[i + 1] === '?' || value[i + 1] === '\\')) {
      out += escapeRe(value[++i]!);
    } else if (c === '*') out += '.*';
    else if (c === '?') out += '.';
    else out += escapeRe(c);
  }
  return new RegExp(`^${prefix}${out}${suffix}$`, cased ? 's' : 'is');
}

function scalarText(v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function valueMatcher(raw: unknown, mods: ReadonlySet<string>, where: string): Matcher {
  if (raw === null || raw === undefined) {
    // Sigma null (fieldPredicate handles it over the whole field; this is for a value on its own).
    return (v) => v === null || v === undefined;
  }
  if (typeof raw === 'object') throw new AlertingError('rule_invalid', `${where}: a value must be a scalar`);
  const text = String(raw);
  if (mods.has('re')) {
    let re: RegExp;
    try {
      re = linearRegex(text);
    } catch (err) {
      throw new AlertingError('rule_invalid', `${where}: bad regular expression: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return (v) => {
      const s = scalarText(v);
      return s !== undefined && re.test(s);
    };
  }
  const cased = mods.has('cased');
  if (!/[*?\\]/.test(text)) {
    // No wildcards: plain string comparison (most values), no regexp.
    const want = cased ? text : text.toLowerCase();
    const cmp = mods.has('contains')
      ? (s: string) => s.includes(want)
      : mods.has('startswith')
        ? (s: string) => s.startsWith(want)
        : mods.has('endswith')
          ? (s: string) => s.endsWith(want)
          : (s: string) => s === want;
    return (v) => {
      const s = scalarText(v);
      return s !== undefined && cmp(cased ? s : s.toLowerCase());
    };
  }
  const pre = mods.has('contains') || mods.has('endswith') ? '.*' : '';
  const suf = mods.has('contains') || mods.has('startswith') ? '.*' : '';
  const re = wildcardRe(text, pre, suf, cased);
  return (v) => {
    const s = scalarText(v);
    return s !== undefined && re.test(s);
  };
}

function fieldPredicate(spec: string, raw: unknown, opts: DetectionOptions, where: string): Predicate {
  const [field, ...modList] = spec.split('|');
  const mods = new Set(modList.map((m) => m.toLowerCase()));
  for (const m of mods)
    if (!MODIFIERS.has(m)) throw new AlertingError('rule_invalid', `${where}: unsupported modifier |${m}`);
  const segs = compilePath(field!);
  if (mods.has('exists')) {
    const want = raw === true || String(raw).toLowerCase() === 'true';
    return (e) => resolve(e, segs).some((v) => v !== null && v !== undefined) === want;
  }
  if (mods.has('fieldref')) {
    // Sigma fieldref: the field equals (any value of) another field of the same event.
    const others = (Array.isArray(raw) ? raw : [raw]).map((f) => compilePath(String(f)));
    const norm = (v: unknown) => scalarText(v)?.toLowerCase();
    return (e) => {
      const mine = new Set(
        resolve(e, segs)
          .map(norm)
          .filter((x): x is string => x !== undefined),
      );
      return others.some((o) => resolve(e, o).some((v) => mine.has(norm(v) ?? '\u0000')));
    };
  }
  let values = Array.isArray(raw) ? raw : [raw];
  if (mods.has('expand')) {
    values = values.flatMap((v) => {
      const m = /^%([^%]+)%$/.exec(String(v));
      return m ? [...(opts.placeholders?.[m[1]!] ?? [])] : [v];
    });
    if (values.length === 0) return () => false;
  }
  const matchers = values.map((v) => valueMatcher(v, mods, `${where}.${spec}`));
  const matchesAny = (m: Matcher) => (e: unknown) => {
    let present = false;
    const hit = visit(e, segs, (v) => {
      present = true;
      return m(v);
    });
    return hit || (!present && m(undefined));
  };
  // Sigma's null: the field is absent or null — on a list, no element has a value. Not "some element is empty".
  const isNull = (e: unknown) => !visit(e, segs, (v) => v !== null && v !== undefined);
  const each = values.map((v, i) => (v === null || v === undefined ? isNull : matchesAny(matchers[i]!)));
  if (mods.has('all')) return (e) => each.every((p) => p(e));
  const p = each.length === 1 ? each[0]! : (e: unknown) => each.some((p) => p(e));
  // Exact values (no wildcard, null or modifier but `cased`) say which events can match at all (prefilter.ts).
  const exact =
    values.length > 0 &&
    [...mods].every((m) => m === 'cased') &&
    values.every((v) => v !== null && v !== undefined && !/[*?\\]/.test(String(v)));
  return exact
    ? withNeeds(
        p,
        needOne(
          segs,
          values.map((v) => String(v).toLowerCase()),
        ),
      )
    : p;
}

function mapPredicate(map: Record<string, unknown>, opts: DetectionOptions, where: string): Predicate {
  const parts = Object.entries(map).map(([k, v]) => fieldPredicate(k, v, opts, where));
  return everyOf(parts);
}

function selectionPredicate(sel: unknown, opts: DetectionOptions, where: string): Predicate {
  if (Array.isArray(sel)) {
    if (sel.every((s) => s !== null && typeof s === 'object')) {
      const alts = sel.map((s, i) => mapPredicate(s as Record<string, unknown>, opts, `${where}[${i}]`));
      return someOf(alts);
    }
    // Keywords: any of these strings anywhere in the event, case-insensitively.
    const words = sel.map((s) => wildcardRe(String(s), '.*', '.*', false));
    return (e) => {
      const text = JSON.stringify(e);
      return words.some((w) => w.test(text));
    };
  }
  if (sel && typeof sel === 'object') return mapPredicate(sel as Record<string, unknown>, opts, where);
  throw new AlertingError('rule_invalid', `${where}: a selection must be a map or a list`);
}

/** Compiles selections by name, without a condition (for `near` correlations). */
export function compileSelections(
  detection: Record<string, unknown>,
  opts: DetectionOptions,
  where: string,
): Map<string, Predicate> {
  const out = new Map<string, Predicate>();
  for (const [name, sel] of Object.entries(detection)) {
    if (!RESERVED.has(name)) out.set(name, selectionPredicate(sel, opts, `${where}.${name}`));
  }
  return out;
}

function build(node: ConditionNode, sels: Map<string, Predicate>, where: string): Predicate {
  switch (node.op) {
    case 'ref': {
      const p = sels.get(node.name);
      if (!p) throw new AlertingError('rule_invalid', `${where}: condition names unknown selection "${node.name}"`);
      return p;
    }
    case 'not': {
      const p = build(node.item, sels, where);
      return (e) => !p(e);
    }
    case 'and':
      return everyOf(node.items.map((n) => build(n, sels, where)));
    case 'or':
      return someOf(node.items.map((n) => build(n, sels, where)));
    case 'of': {
      const names = expandPattern(node.pattern, [...sels.keys()]);
      if (names.length === 0)
        throw new AlertingError('rule_invalid', `${where}: "${node.pattern}" matches no selection`);
      const ps = names.map((n) => sels.get(n)!);
      return node.quantifier === 'all' ? everyOf(ps) : someOf(ps);
    }
  }
}

/** Compiles a detection with a plain (no `|` aggregation) condition into one predicate. */
export function compileDetection(detection: Record<string, unknown>, opts: DetectionOptions, where: string): Predicate {
  const cond = detection['condition'];
  const conditions = Array.isArray(cond) ? cond : [cond];
  if (conditions.some((c) => typeof c !== 'string'))
    throw new AlertingError('rule_invalid', `${where}: condition must be a string`);
  const sels = compileSelections(detection, opts, where);
  const ps = (conditions as string[]).map((c) => build(parseCondition(c), sels, where));
  return ps.length === 1 ? ps[0]! : someOf(ps);
}
