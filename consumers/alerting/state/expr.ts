/**
 * Conditions over values, for rules that compare, compute and look at time
 * (`when:`): a small expression language, compiled once to a closure.
 *
 *   prev.country != null and country != prev.country and (time - prev.time) < 3600000
 *   km(prev.lat, prev.lon, lat, lon) / max((time - prev.time) / 3600000, 0.01) > 900
 *   hour(time) < 7 or weekday(time) >= 6
 *
 * - names: the rule's `fields` (values read from the event by path), `time`
 *   (event time, epoch ms); `prev.<name>` / `prev.time` are the previous
 *   event's of the same key (null when there is none);
 * - literals: numbers, 'text' or "text", true, false, null;
 * - `+ - * / %`, comparisons `== != < <= > >=`, `and or not`, parentheses;
 *   `+` joins text when a side is text;
 * - functions (functions.ts): km(lat1, lon1, lat2, lon2) (great-circle
 *   distance), abs, min, max, round, lower, upper, len, if(cond, a, b),
 *   coalesce(a, b, …) (the first neither null nor ''), hour(t) / weekday(t)
 *   (1 = Monday … 7) / minute(t) in the rule's time zone (or a zone given as a
 *   second argument);
 * - null propagates through arithmetic and functions; a comparison with null
 *   is false except `== null` / `!= null`; a condition holds only when it is true.
 *
 * Pure and deterministic: no clock, no randomness (the engine's contract).
 */
import { AlertingError } from '../errors.js';
import { callFunction, num, type Expr } from './functions.js';

export { km, zoned } from './functions.js';

export type { Expr, ExprContext, Value } from './functions.js';

type Tok =
  | { k: 'num'; v: number; at: number }
  | { k: 'str'; v: string; at: number }
  | { k: 'id'; v: string; at: number }
  | { k: 'op'; v: string; at: number };

const OPS = ['==', '!=', '<=', '>=', '<', '>', '+', '-', '*', '/', '%', '(', ')', ','];

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const num = /^\d+(\.\d+)?([eE][-+]?\d+)?/.exec(src.slice(i));
    if (num) {
      out.push({ k: 'num', v: Number(num[0]), at: i });
      i += num[0].length;
      continue;
    }
    if (c === '"' || c === "'") {
      const end = src.indexOf(c, i + 1);
      if (end < 0) throw new AlertingError('rule_invalid', `unterminated text at ${i}`);
      out.push({ k: 'str', v: src.slice(i + 1, end), at: i });
      i = end + 1;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(src.slice(i));
    if (id) {
      out.push({ k: 'id', v: id[0], at: i });
      i += id[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new AlertingError('rule_invalid', `unexpected ${JSON.stringify(c)} at ${i}`);
    out.push({ k: 'op', v: op, at: i });
    i += op.length;
  }
  return out;
}

export interface CompileExprOptions {
  /** Names the expression may use besides `time` (the rule's fields). */
  readonly names: ReadonlySet<string>;
  /** Whether `prev.` may be used (rules with per-key state). */
  readonly prev: boolean;
  readonly timeZone: string;
  readonly where: string;
  /**
   * Expressions over the event (a rule's `title`, `severity`, `dedup`): a name that is not a field is an
   * event field path (`actor.alternateId`); each is added here, and the caller puts its value in `cur`
   * under that name. Absent: an unknown name is an error (`when`).
   */
  readonly paths?: Set<string>;
}

/** Compiles an expression; unknown names, functions and syntax errors fail here, at boot. */
export function compileExpr(src: string, o: CompileExprOptions): Expr {
  const toks = tokenize(src);
  let i = 0;
  const fail = (m: string): never => {
    throw new AlertingError(
      'rule_invalid',
      `${o.where}: ${m} (at ${toks[i]?.at ?? src.length} in ${JSON.stringify(src)})`,
    );
  };
  const isOp = (v: string) => toks[i]?.k === 'op' && toks[i]!.v === v;
  const isKw = (v: string) => toks[i]?.k === 'id' && String(toks[i]!.v).toLowerCase() === v;

  const orE = (): Expr => {
    let l = andE();
    while (isKw('or')) {
      i++;
      const a = l;
      const b = andE();
      l = (c) => a(c) === true || b(c) === true;
    }
    return l;
  };
  const andE = (): Expr => {
    let l = notE();
    while (isKw('and')) {
      i++;
      const a = l;
      const b = notE();
      l = (c) => a(c) === true && b(c) === true;
    }
    return l;
  };
  const notE = (): Expr => {
    if (isKw('not')) {
      i++;
      const a = notE();
      return (c) => a(c) !== true;
    }
    return cmpE();
  };
  const cmpE = (): Expr => {
    const l = addE();
    const t = toks[i];
    if (t?.k !== 'op' || !['==', '!=', '<', '<=', '>', '>='].includes(t.v)) return l;
    i++;
    const r = addE();
    const op = t.v;
    return (c) => {
      const a = l(c);
      const b = r(c);
      if (op === '==' || op === '!=') {
        const na = num(a);
        const nb = num(b);
        const eq =
          a === null || b === null
            ? a === b
            : na !== null && nb !== null
              ? na === nb
              : String(a).toLowerCase() === String(b).toLowerCase();
        return op === '==' ? eq : !eq;
      }
      if (a === null || b === null) return false;
      const na = num(a);
      const nb = num(b);
      const d = na !== null && nb !== null ? na - nb : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
      return op === '<' ? d < 0 : op === '<=' ? d <= 0 : op === '>' ? d > 0 : d >= 0;
    };
  };
  const addE = (): Expr => {
    let l = mulE();
    while (isOp('+') || isOp('-')) {
      const op = toks[i++]!.v;
      const a = l;
      const b = mulE();
      l = (c) => {
        const x = a(c);
        const y = b(c);
        if (x === null || y === null) return null;
        if (op === '+' && (typeof x === 'string' || typeof y === 'string') && (num(x) === null || num(y) === null))
          return `${x}${y}`;
        const nx = num(x);
        const ny = num(y);
        return nx === null || ny === null ? null : op === '+' ? nx + ny : nx - ny;
      };
    }
    return l;
  };
  const mulE = (): Expr => {
    let l = unary();
    while (isOp('*') || isOp('/') || isOp('%')) {
      const op = toks[i++]!.v;
      const a = l;
      const b = unary();
      l = (c) => {
        const x = num(a(c));
        const y = num(b(c));
        if (x === null || y === null) return null;
        if ((op === '/' || op === '%') && y === 0) return null;
        return op === '*' ? x * y : op === '/' ? x / y : x % y;
      };
    }
    return l;
  };
  const unary = (): Expr => {
    if (isOp('-')) {
      i++;
      const a = unary();
      return (c) => {
        const x = num(a(c));
        return x === null ? null : -x;
      };
    }
    return primary();
  };
  const primary = (): Expr => {
    const t = toks[i];
    if (!t) return fail('unexpected end');
    if (t.k === 'num' || t.k === 'str') {
      i++;
      const v = t.v;
      return () => v;
    }
    if (t.k === 'op' && t.v === '(') {
      i++;
      const e = orE();
      if (!isOp(')')) fail('missing )');
      i++;
      return e;
    }
    if (t.k !== 'id') return fail(`unexpected ${JSON.stringify(t.v)}`);
    i++;
    const low = t.v.toLowerCase();
    if (low === 'null') return () => null;
    if (low === 'true' || low === 'false') return () => low === 'true';
    if (isOp('(')) {
      i++;
      const args: Expr[] = [];
      if (!isOp(')')) {
        for (;;) {
          args.push(orE());
          if (isOp(',')) {
            i++;
            continue;
          }
          break;
        }
      }
      if (!isOp(')')) fail('missing ) after arguments');
      i++;
      return callFunction(low, args, o, fail);
    }
    const [head, ...rest] = t.v.split('.');
    const isPrev = head === 'prev' && rest.length > 0;
    const name = isPrev ? rest.join('.') : head === 'cur' && rest.length > 0 ? rest.join('.') : t.v;
    if (name !== 'time' && !o.names.has(name)) {
      if (!o.paths) fail(`unknown name "${t.v}" (fields: ${[...o.names].join(', ') || 'none'}, time)`);
      // Read from the event by the caller (grouping/labels.ts), under its path as written.
      o.paths?.add(name);
    }
    if (isPrev && !o.prev) fail(`"${t.v}": prev. needs a stateful rule`);
    return isPrev ? (c) => (c.prev ? (c.prev[name] ?? null) : null) : (c) => c.cur[name] ?? null;
  };
  if (toks.length === 0) fail('empty expression');
  const e = orE();
  if (i !== toks.length) fail(`unexpected ${JSON.stringify(toks[i]!.v)}`);
  return e;
}
