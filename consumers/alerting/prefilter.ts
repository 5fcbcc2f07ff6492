/**
 * Which rules can an event match at all? Most rules name the event types
 * they are about (`eventType: user.session.start`), and an event has one
 * type, so evaluating every rule on every event mostly proves "no" the long
 * way. Predicates here carry, beside the function, a necessary condition
 * ("Needs"): the predicate can only hold when some value at a path, as
 * lower-case text, is one of a few literals. The engine indexes its rules by
 * those literals on the path most of them constrain, and per event evaluates
 * only the rules indexed under the event's values there plus the rules with
 * no such condition, in their original order: the same alerts, in the same
 * order, as evaluating them all.
 *
 * A Needs must never exclude an event the predicate accepts, so it is only
 * derived where that is plain: exact values compared as the matchers compare
 * them (lower-cased text of each value `visit` yields), through AND (either
 * side's condition), OR (a path both sides constrain, the union) and nothing
 * else; a negation, wildcard, modifier or null test gives no condition.
 */
import { visit, type FieldPath } from './fields.js';

type Pred = (event: unknown) => boolean;

/** Some value at `path`, as lower-case text (`needText`), is one of `values`. */
export interface Need {
  readonly path: FieldPath;
  readonly values: ReadonlySet<string>;
}

/** A conjunction of Need, by path (raw spelling and normal form: they resolve differently). */
export type Needs = ReadonlyMap<string, Need>;

const NONE: Needs = new Map();
const needs = new WeakMap<Pred, Needs>();

export function pathKey(path: FieldPath): string {
  return `${path.join('.')}\u0000${(path.raw ?? path).join('.')}`;
}

/** A value as the matchers compare it: JSON text for objects, lower-cased; undefined for null and absent. */
export function needText(v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  return (typeof v === 'object' ? JSON.stringify(v) : String(v)).toLowerCase();
}

/** Records what `p` needs; returns `p`. */
export function withNeeds<P extends Pred>(p: P, n: Needs): P {
  if (n.size > 0) needs.set(p, n);
  return p;
}

/** `p` holds only if a value at `path` is one of `values` (already in needText form). */
export function needOne(path: FieldPath, values: Iterable<string>): Needs {
  return new Map([[pathKey(path), { path, values: new Set(values) }]]);
}

export function needsOf(p: Pred): Needs {
  return needs.get(p) ?? NONE;
}

/** All of `ps` hold: every one's conditions hold (on a path two constrain, either set will do: keep the smaller). */
export function allOf(ps: readonly Pred[]): Needs {
  const out = new Map<string, Need>();
  for (const p of ps)
    for (const [k, n] of needsOf(p)) {
      const had = out.get(k);
      if (!had || n.values.size < had.values.size) out.set(k, n);
    }
  return out;
}

/** One of `ps` holds: only a path every one constrains is still constrained, to the union of their values. */
export function anyOf(ps: readonly Pred[]): Needs {
  if (ps.length === 0) return NONE;
  const [first, ...rest] = ps.map(needsOf);
  const out = new Map<string, Need>();
  for (const [k, n] of first!) {
    if (!rest.every((r) => r.has(k))) continue;
    const values = new Set(n.values);
    for (const r of rest) for (const v of r.get(k)!.values) values.add(v);
    out.set(k, { path: n.path, values });
  }
  return out;
}

/** True when every one of `ps` is; needs what all of them need together (`allOf`). */
export function everyOf(ps: readonly Pred[]): Pred {
  return withNeeds((e) => ps.every((p) => p(e)), allOf(ps));
}

/** True when one of `ps` is; needs only what each of them needs (`anyOf`). */
export function someOf(ps: readonly Pred[]): Pred {
  return withNeeds((e) => ps.some((p) => p(e)), anyOf(ps));
}

/**
 * Rules by the values they need on one path (the one most rules constrain).
 * `candidates` gives, in the rules' order, those an event can match.
 */
export class RuleIndex<R> {
  readonly #all: readonly R[];
  readonly #path: FieldPath | null;
  /** Rules without a condition on the path, in order. */
  readonly #always: readonly R[];
  /** Needed value → the rules an event with (only) that value can match, in order. */
  readonly #byValue = new Map<string, readonly R[]>();
  /** Needed value → the rule positions needing it (for events with several values at the path). */
  readonly #positions = new Map<string, number[]>();
  readonly #alwaysPositions: readonly number[];

  constructor(rules: readonly R[], needsOfRule: (r: R) => Needs) {
    this.#all = rules;
    const ruleNeeds = rules.map(needsOfRule);
    const votes = new Map<string, number>();
    for (const n of ruleNeeds) for (const k of n.keys()) votes.set(k, (votes.get(k) ?? 0) + 1);
    let best: string | null = null;
    for (const [k, c] of votes) if (best === null || c > votes.get(best)!) best = k;
    const always: number[] = [];
    this.#path = best === null ? null : ruleNeeds.find((n) => n.has(best))!.get(best)!.path;
    ruleNeeds.forEach((n, i) => {
      const need = best === null ? undefined : n.get(best);
      if (!need) always.push(i);
      else {
        for (const v of need.values) {
          const ps = this.#positions.get(v) ?? [];
          ps.push(i);
          this.#positions.set(v, ps);
        }
      }
    });
    this.#alwaysPositions = always;
    this.#always = always.map((i) => rules[i]!);
    for (const [v, ps] of this.#positions) this.#byValue.set(v, this.#merge([ps]));
  }

  /** How many rules are evaluated on every event (for tests and telemetry). */
  get unindexed(): number {
    return this.#always.length;
  }

  candidates(event: unknown): readonly R[] {
    if (this.#path === null) return this.#all;
    let one: string | undefined;
    let more: string[] | undefined;
    visit(event, this.#path, (v) => {
      const t = needText(v);
      if (t === undefined || t === one || !this.#positions.has(t)) return false;
      if (one === undefined) one = t;
      else (more ??= [one]).push(t);
      return false;
    });
    if (one === undefined) return this.#always;
    if (more === undefined) return this.#byValue.get(one)!;
    return this.#merge(more.map((t) => this.#positions.get(t)!));
  }

  /** The always-evaluated rules and those at `lists` (each ascending), once each, in the rules' order. */
  #merge(lists: readonly (readonly number[])[]): readonly R[] {
    const at = new Set<number>(this.#alwaysPositions);
    for (const l of lists) for (const i of l) at.add(i);
    return [...at].sort((a, b) => a - b).map((i) => this.#all[i]!);
  }
}
