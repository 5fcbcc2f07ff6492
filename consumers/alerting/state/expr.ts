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
 * - functions: km(lat1, lon1, lat2, lon2) (great-circle distance), abs, min,
 *   max, round, lower, len, hour(t) / weekday(t) (1 = Monday … 7) / minute(t)
 *   in the rule's time zone (or a zone given as a second argument);
 * - null propagates through arithmetic and functions; a comparison with null
 *   is false except `== null` / `!= null`; a condition holds only when it is true.
 *
 * Pure and deterministic: no clock, no randomness (the engine's contract).
 */
import { AlertingError } from '../errors.js';

export type Value = number | string | boolean | null;
export interface ExprContext {
  /** Current event's named values, `time` included. */
  readonly cur: Readonly<Record<string, Value>>;
  /** Previous event's of the same key, or null. */
  readonly prev: Readonly<Record<string, Value>> | null;
}
export type Expr = (ctx: ExprContext) => Value;

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

const num = (v: Value): number | null =>
  typeof v === 'number' && Number.isFinite(v)
    ? v
    : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))
      ? Number(v)
      : null;

const EARTH_KM = 6371.0088;
/** Great-circle distance (haversine), km. */
export function km(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const r = Math.PI / 180;
  const a =
    Math.sin(((lat2 - lat1) * r) / 2) ** 2 +
    Math.cos(lat1 * r) * Math.cos(lat2 * r) * Math.sin(((lon2 - lon1) * r) / 2) ** 2;
  return 2 * EARTH_KM * Math.asin(Math.min(1, Math.sqrt(a)));
}

const partsCache = new Map<string, Intl.DateTimeFormat>();
/** Hour, minute and ISO weekday of an instant in a time zone (IANA name). */
export function zoned(t: number, tz: string): { hour: number; minute: number; weekday: number } {
  let f = partsCache.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hour: 'numeric',
      minute: 'numeric',
      weekday: 'short',
      hourCycle: 'h23',
    });
    partsCache.set(tz, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(t)).map((x) => [x.type, x.value]));
  const weekday = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(p['weekday']!) + 1;
  return { hour: Number(p['hour']), minute: Number(p['minute']), weekday };
}

/** Throws unless `tz` is a time zone the runtime knows. */
export function checkTimeZone(tz: string, where: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw new AlertingError('rule_invalid', `${where}: unknown time zone ${JSON.stringify(tz)}`);
  }
}

export interface CompileExprOptions {
  /** Names the expression may use besides `time` (the rule's fields). */
  readonly names: ReadonlySet<string>;
  /** Whether `prev.` may be used (rules with per-key state). */
  readonly prev: boolean;
  readonly timeZone: string;
  readonly where: string;
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
  const fn = (name: string, args: Expr[]): Expr => {
    const n = (c: ExprContext, k: number) => num(args[k]!(c));
    const arity = (lo: number, hi = lo) => {
      if (args.length < lo || args.length > hi) fail(`${name}() takes ${lo === hi ? lo : `${lo}-${hi}`} arguments`);
    };
    const tzOf = (c: ExprContext) => (args[1] ? String(args[1](c) ?? o.timeZone) : o.timeZone);
    switch (name) {
      case 'km':
        arity(4);
        return (c) => {
          const v = [0, 1, 2, 3].map((k) => n(c, k));
          return v.some((x) => x === null) ? null : km(v[0]!, v[1]!, v[2]!, v[3]!);
        };
      case 'abs':
      case 'round':
        arity(1);
        return (c) => {
          const x = n(c, 0);
          return x === null ? null : name === 'abs' ? Math.abs(x) : Math.round(x);
        };
      case 'min':
      case 'max':
        arity(2, 8);
        return (c) => {
          const v = args.map((_, k) => n(c, k));
          return v.some((x) => x === null)
            ? null
            : name === 'min'
              ? Math.min(...(v as number[]))
              : Math.max(...(v as number[]));
        };
      case 'lower':
        arity(1);
        return (c) => {
          const v = args[0]!(c);
          return v === null ? null : String(v).toLowerCase();
        };
      case 'len':
        arity(1);
        return (c) => {
          const v = args[0]!(c);
          return v === null ? null : String(v).length;
        };
      case 'hour':
      case 'minute':
      case 'weekday':
        arity(1, 2);
        if (args[1] === undefined) checkTimeZone(o.timeZone, o.where);
        return (c) => {
          const t = n(c, 0);
          if (t === null) return null;
          return zoned(t, tzOf(c))[name];
        };
      default:
        return fail(`unknown function ${name}()`);
    }
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
      return fn(low, args);
    }
    const [head, ...rest] = t.v.split('.');
    const isPrev = head === 'prev' && rest.length > 0;
    const name = isPrev ? rest.join('.') : head === 'cur' && rest.length > 0 ? rest.join('.') : t.v;
    if (name !== 'time' && !o.names.has(name))
      fail(`unknown name "${t.v}" (fields: ${[...o.names].join(', ') || 'none'}, time)`);
    if (isPrev && !o.prev) fail(`"${t.v}": prev. needs a stateful rule`);
    return isPrev ? (c) => (c.prev ? (c.prev[name] ?? null) : null) : (c) => c.cur[name] ?? null;
  };
  if (toks.length === 0) fail('empty expression');
  const e = orE();
  if (i !== toks.length) fail(`unexpected ${JSON.stringify(toks[i]!.v)}`);
  return e;
}
