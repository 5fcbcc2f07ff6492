/**
 * The functions of the expression language (expr.ts): what each takes and
 * returns. Null propagates through all of them except `coalesce` (whose point
 * is to replace it) and `if` (which takes the branch its condition picks).
 */
import { AlertingError } from '../errors.js';

/** What an expression computes (expr.ts re-exports these types). */
export type Value = number | string | boolean | null;
export interface ExprContext {
  /** Current event's named values, `time` included. */
  readonly cur: Readonly<Record<string, Value>>;
  /** Previous event's of the same key, or null. */
  readonly prev: Readonly<Record<string, Value>> | null;
}
export type Expr = (ctx: ExprContext) => Value;

/** A value as a number: numbers, and text that is one; else null. */
export const num = (v: Value): number | null =>
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

export interface FunctionOptions {
  readonly timeZone: string;
  readonly where: string;
}

/** Compiles a call of `name` over compiled arguments; `fail` throws the compile error (unknown function, arity). */
export function callFunction(
  name: string,
  args: readonly Expr[],
  o: FunctionOptions,
  fail: (m: string) => never,
): Expr {
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
    case 'upper':
      arity(1);
      return (c) => {
        const v = args[0]!(c);
        return v === null ? null : name === 'lower' ? String(v).toLowerCase() : String(v).toUpperCase();
      };
    case 'len':
      arity(1);
      return (c) => {
        const v = args[0]!(c);
        return v === null ? null : String(v).length;
      };
    case 'if':
      // if(condition, then, else): the condition holds only when it is true (as `when`), so null takes `else`.
      arity(3);
      return (c) => (args[0]!(c) === true ? args[1]!(c) : args[2]!(c));
    case 'coalesce':
      arity(2, 8);
      return (c) => {
        for (const a of args) {
          const v = a(c);
          if (v !== null && v !== '') return v;
        }
        return null;
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
}
