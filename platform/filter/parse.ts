/**
 * The System Log filter language: the SCIM filter syntax (RFC 7644 §3.4.2.2)
 * that the service's System Log API takes as `filter`, and in which the
 * vendor's detection catalogue is written:
 *
 *   eventType eq "user.session.start" and (target.displayName co "Admin" or not (x pr))
 *
 * - attribute operators `eq ne co sw ew gt ge lt le` with a value, `pr` without;
 *   `in [v, …]` (used by the catalogue, not SCIM: true when `eq` holds for one);
 * - logical `and`, `or`, `not`, parentheses; precedence not > and > or (SCIM);
 * - operators and keywords are case-insensitive (`AND` = `and`), as SCIM says;
 * - values: "strings" (JSON escapes: `\"`, `\\`, `\u00e9`), numbers, true, false, null;
 * - attribute paths are dotted (`debugContext.debugData.risk`); a numeric
 *   segment is a list position (`target.0.displayName`, the first target).
 *
 * It lives on the ground floor because two components speak it: alerting
 * (consumers/alerting/filter/evaluate.ts turns the tree into a predicate on an
 * event) and search (analytics/search/, through sql.ts here, which turns it
 * into parameterised ClickHouse SQL); one parser means one meaning. Errors carry the offset of the
 * offending token so `hooklog rules lint` can point at it.
 */
import { HooklogError } from '../errors.js';

export type Literal = string | number | boolean | null;
export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';

export type FilterNode =
  | { readonly op: 'and' | 'or'; readonly items: readonly FilterNode[] }
  | { readonly op: 'not'; readonly item: FilterNode }
  | { readonly op: 'cmp'; readonly cmp: CompareOp; readonly path: string; readonly value: Literal; readonly at: number }
  | { readonly op: 'in'; readonly path: string; readonly values: readonly Literal[]; readonly at: number }
  | { readonly op: 'pr'; readonly path: string; readonly at: number };

const COMPARE = new Set<string>(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);

/**
 * A filter that does not parse: `offset` is where in the text (0-based). CONFIG_INVALID, as a rule that does
 * not load is; a search (analytics/search/) reports it as a query's mistake, with the column.
 */
export class FilterSyntaxError extends HooklogError {
  readonly offset: number;
  constructor(message: string, offset: number) {
    super('CONFIG_INVALID', message);
    this.name = 'FilterSyntaxError';
    this.offset = offset;
  }
}

type Tok =
  | { t: 'word'; v: string; at: number }
  | { t: 'str'; v: string; at: number }
  | { t: 'num'; v: number; at: number }
  | { t: 'punct'; v: '(' | ')' | '[' | ']' | ','; at: number };

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')' || c === '[' || c === ']' || c === ',') {
      out.push({ t: 'punct', v: c, at: i });
      i++;
    } else if (c === '"') {
      // A JSON string literal: find the closing quote, skipping escapes, and let JSON decode it.
      let j = i + 1;
      while (j < src.length && src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
      if (j >= src.length) throw new FilterSyntaxError(`unterminated string starting at ${i}`, i);
      let v: string;
      try {
        v = JSON.parse(src.slice(i, j + 1)) as string;
      } catch {
        throw new FilterSyntaxError(`bad escape in string starting at ${i}`, i);
      }
      out.push({ t: 'str', v, at: i });
      i = j + 1;
    } else if (/[-0-9]/.test(c) && /^-?\d/.test(src.slice(i, i + 2))) {
      const m = /^-?\d+(\.\d+)?([eE][-+]?\d+)?/.exec(src.slice(i))!;
      // `target.0.x` starts with a letter, so a token starting with a digit is a number.
      out.push({ t: 'num', v: Number(m[0]), at: i });
      i += m[0].length;
    } else if (/[A-Za-z_$]/.test(c)) {
      const m = /^[A-Za-z_$][A-Za-z0-9_$.:-]*/.exec(src.slice(i))!;
      out.push({ t: 'word', v: m[0], at: i });
      i += m[0].length;
    } else {
      throw new FilterSyntaxError(`unexpected character ${JSON.stringify(c)} at ${i}`, i);
    }
  }
  return out;
}

/** Parses a filter expression; throws FilterSyntaxError saying where. */
export function parseFilter(src: string): FilterNode {
  const toks = tokenize(src);
  let i = 0;
  const kw = (k: string) => {
    const t = toks[i];
    return t?.t === 'word' && t.v.toLowerCase() === k;
  };
  const fail = (what: string): never => {
    const at = toks[i]?.at ?? src.length;
    throw new FilterSyntaxError(`${what} at ${at}`, at);
  };
  const literal = (): Literal => {
    const t = toks[i];
    if (!t) return fail('expected a value, got the end');
    if (t.t === 'str' || t.t === 'num') {
      i++;
      return t.v;
    }
    if (t.t === 'word') {
      const w = t.v.toLowerCase();
      if (w === 'true' || w === 'false' || w === 'null') {
        i++;
        return w === 'null' ? null : w === 'true';
      }
    }
    return fail(`expected a value ("text", a number, true, false or null)`);
  };
  const attrExpr = (): FilterNode => {
    const t = toks[i];
    if (!t || t.t !== 'word') return fail('expected an attribute name');
    if (['and', 'or', 'not'].includes(t.v.toLowerCase())) fail(`unexpected "${t.v}"`);
    if (/\.$|^\.|\.\./.test(t.v)) fail(`malformed attribute path "${t.v}"`);
    i++;
    const opTok = toks[i];
    if (!opTok || opTok.t !== 'word') return fail(`expected an operator after "${t.v}"`);
    const op = opTok.v.toLowerCase();
    i++;
    if (op === 'pr') return { op: 'pr', path: t.v, at: t.at };
    if (COMPARE.has(op)) return { op: 'cmp', cmp: op as CompareOp, path: t.v, value: literal(), at: t.at };
    if (op === 'in') {
      const open = toks[i];
      if (!open || open.t !== 'punct' || (open.v !== '[' && open.v !== '('))
        return fail('`in` needs a list: [ "a", "b" ]');
      const close = open.v === '[' ? ']' : ')';
      i++;
      const values: Literal[] = [];
      for (;;) {
        values.push(literal());
        const sep = toks[i];
        if (sep?.t === 'punct' && sep.v === ',') {
          i++;
          continue;
        }
        if (sep?.t === 'punct' && sep.v === close) {
          i++;
          break;
        }
        fail(`expected , or ${close} in the list`);
      }
      return { op: 'in', path: t.v, values, at: t.at };
    }
    i--;
    return fail(`unknown operator "${opTok.v}" (eq ne co sw ew gt ge lt le pr in)`);
  };
  const primary = (): FilterNode => {
    const t = toks[i];
    if (t?.t === 'punct' && t.v === '(') {
      i++;
      const e = orExpr();
      const c = toks[i];
      if (!c || c.t !== 'punct' || c.v !== ')') fail('missing )');
      i++;
      return e;
    }
    return attrExpr();
  };
  const notExpr = (): FilterNode => {
    if (kw('not')) {
      i++;
      return { op: 'not', item: notExpr() };
    }
    return primary();
  };
  const andExpr = (): FilterNode => {
    const items = [notExpr()];
    while (kw('and')) {
      i++;
      items.push(notExpr());
    }
    return items.length === 1 ? items[0]! : { op: 'and', items };
  };
  const orExpr = (): FilterNode => {
    const items = [andExpr()];
    while (kw('or')) {
      i++;
      items.push(andExpr());
    }
    return items.length === 1 ? items[0]! : { op: 'or', items };
  };
  if (toks.length === 0) throw new FilterSyntaxError('empty filter', 0);
  const tree = orExpr();
  if (i !== toks.length) fail(`unexpected ${JSON.stringify(String(toks[i]!.v))}`);
  return tree;
}

/** Every attribute path the filter reads, in order of appearance. */
export function filterPaths(node: FilterNode): string[] {
  switch (node.op) {
    case 'and':
    case 'or':
      return node.items.flatMap(filterPaths);
    case 'not':
      return filterPaths(node.item);
    default:
      return [node.path];
  }
}

/**
 * `result` is not a LogEvent field, yet the vendor's own AiTM detection says
 * `result eq "FAILURE"` beside `outcome.reason`: the only `result` an event
 * has is `outcome.result`, so that is what it reads (hooklog rules lint notes it).
 */
export const FILTER_ALIASES: Readonly<Record<string, string>> = { result: 'outcome.result' };

/** The path a filter attribute reads: aliases applied. */
export function resolveFilterPath(path: string): string {
  return FILTER_ALIASES[path.toLowerCase()] ?? path;
}
