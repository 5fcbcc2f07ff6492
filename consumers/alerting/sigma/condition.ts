/**
 * Sigma condition expressions: identifiers, `and`, `or`, `not`, parentheses,
 * `1 of x*`, `all of x*`, `1 of them`, `all of them`. Precedence (high → low):
 * not, and, or — as in the Sigma specification.
 */
import { AlertingError } from '../errors.js';

export type ConditionNode =
  | { readonly op: 'ref'; readonly name: string }
  | { readonly op: 'and' | 'or'; readonly items: readonly ConditionNode[] }
  | { readonly op: 'not'; readonly item: ConditionNode }
  | { readonly op: 'of'; readonly quantifier: 'one' | 'all'; readonly pattern: string };

const TOKEN = /\s*(\(|\)|[A-Za-z0-9_*.-]+)/y;

function tokenize(src: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  let pos = 0;
  while (pos < src.length) {
    if (/^\s*$/.test(src.slice(pos))) break;
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(src);
    if (!m) throw new AlertingError('rule_invalid', `unexpected character in condition at ${pos}: ${src}`);
    out.push(m[1]!);
    pos = TOKEN.lastIndex;
  }
  return out;
}

/** Parses a condition into a tree; names are checked against the selections by the compiler. */
export function parseCondition(src: string): ConditionNode {
  const toks = tokenize(src);
  let i = 0;
  const peek = () => toks[i]?.toLowerCase();
  const fail = (what: string): never => {
    throw new AlertingError('rule_invalid', `condition "${src}": ${what}`);
  };
  const orExpr = (): ConditionNode => {
    const items = [andExpr()];
    while (peek() === 'or') {
      i++;
      items.push(andExpr());
    }
    return items.length === 1 ? items[0]! : { op: 'or', items };
  };
  const andExpr = (): ConditionNode => {
    const items = [notExpr()];
    while (peek() === 'and') {
      i++;
      items.push(notExpr());
    }
    return items.length === 1 ? items[0]! : { op: 'and', items };
  };
  const notExpr = (): ConditionNode => {
    if (peek() === 'not') {
      i++;
      return { op: 'not', item: notExpr() };
    }
    return primary();
  };
  const primary = (): ConditionNode => {
    const t = toks[i];
    if (t === undefined) return fail('unexpected end');
    if (t === '(') {
      i++;
      const e = orExpr();
      if (toks[i] !== ')') fail('missing )');
      i++;
      return e;
    }
    if ((t === '1' || t.toLowerCase() === 'all') && toks[i + 1]?.toLowerCase() === 'of') {
      const pattern = toks[i + 2];
      if (pattern === undefined || pattern === '(' || pattern === ')') fail('`of` needs a name pattern or `them`');
      i += 3;
      return { op: 'of', quantifier: t === '1' ? 'one' : 'all', pattern: pattern! };
    }
    if (['and', 'or', 'not', ')'].includes(t.toLowerCase())) fail(`unexpected "${t}"`);
    i++;
    return { op: 'ref', name: t };
  };
  const tree = orExpr();
  if (i !== toks.length) fail(`unexpected "${toks[i]}"`);
  return tree;
}

/** Names of `names` matched by a Sigma `of` pattern (`them` = all; `*` wildcard). */
export function expandPattern(pattern: string, names: readonly string[]): string[] {
  if (pattern.toLowerCase() === 'them') return names.filter((n) => !n.startsWith('_'));
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((s) => s.replace(/[.+?^${}()|[\]\\-]/g, '\\$&'))
      .join('.*')}$`,
  );
  return names.filter((n) => re.test(n));
}
