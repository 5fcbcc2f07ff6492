/**
 * Sigma correlation rules (specification v2), loaded as published beside the
 * base rules they name (by `name` or `id`, in the same file or another one):
 *
 * - event_count → a threshold rule over the base rules' events;
 * - value_count → a distinct rule (`condition.field` counted);
 * - temporal / temporal_ordered → a temporal rule: one event of each base
 *   rule, same group, within `timespan` (in rule order when ordered);
 *   `aliases` give each base rule its own field for a group-by name.
 *
 * Conditions: `gte`/`gt` (at least). `lt`/`lte`/`eq`/ranges ask for "at
 * most", which the stream cannot decide before the timespan has passed; they
 * are refused with the rule named. Base rules named by a correlation alert on
 * their own only with `generate: true` (the specification's default is false).
 */
import { AlertingError } from '../errors.js';
import { compilePath } from '../fields.js';
import { someOf } from '../prefilter.js';
import { compileRule, type CompileOptions } from '../rules/compile.js';
import type { CompiledRule } from '../rules/types.js';
import { parseTimeframe } from './load.js';

export interface SigmaBase {
  readonly doc: Record<string, unknown>;
  readonly rule: CompiledRule;
  readonly file: string;
}

export interface CorrelationDoc {
  readonly doc: Record<string, unknown>;
  readonly file: string;
}

export function isCorrelationDoc(doc: unknown): boolean {
  return (
    !!doc &&
    typeof doc === 'object' &&
    !Array.isArray(doc) &&
    typeof (doc as Record<string, unknown>)['correlation'] === 'object'
  );
}

const LEVELS = new Set(['informational', 'low', 'medium', 'high', 'critical']);

/** Compiles correlations against the base rules; returns them and the ids of base rules that must not alert alone. */
export function compileCorrelations(
  corrs: readonly CorrelationDoc[],
  bases: readonly SigmaBase[],
  opts: CompileOptions = {},
): { rules: CompiledRule[]; silenced: Set<string> } {
  const byRef = new Map<string, SigmaBase>();
  for (const b of bases) {
    for (const ref of [b.doc['name'], b.doc['id']]) if (typeof ref === 'string' && ref) byRef.set(ref, b);
  }
  const rules: CompiledRule[] = [];
  const silenced = new Set<string>();
  const generated = new Set<string>();
  for (const { doc, file } of corrs) {
    const c = doc['correlation'] as Record<string, unknown>;
    const id = typeof doc['id'] === 'string' ? doc['id'] : typeof doc['name'] === 'string' ? doc['name'] : '';
    const where = `${file}: correlation ${id || '?'}`;
    const fail = (m: string): never => {
      throw new AlertingError('rule_invalid', `${where}: ${m}`);
    };
    if (!id) fail('needs an id or a name');
    const type = String(c['type'] ?? '');
    const refs = Array.isArray(c['rules'])
      ? (c['rules'] as unknown[]).map(String)
      : fail('`rules` must list base rule names or ids');
    const named = refs.map(
      (r) => byRef.get(r) ?? fail(`names rule "${r}", which is not loaded (load it beside the correlation)`),
    );
    const windowMs = parseTimeframe(c['timespan'], where);
    const groupBy = Array.isArray(c['group-by']) ? (c['group-by'] as unknown[]).map(String) : [];
    const aliases = (c['aliases'] ?? {}) as Record<string, Record<string, string>>;
    const fieldFor = (g: string, b: SigmaBase) => {
      const a = aliases[g];
      if (!a) return g;
      const name = [b.doc['name'], b.doc['id']].find((r) => typeof r === 'string' && a[r] !== undefined) as
        string | undefined;
      return name ? a[name]! : fail(`alias ${g} has no field for rule ${String(b.doc['name'] ?? b.doc['id'])}`);
    };
    const level = String(doc['level'] ?? '').toLowerCase();
    const base = {
      id,
      title: typeof doc['title'] === 'string' ? doc['title'] : id,
      severity: LEVELS.has(level) ? level : 'medium',
    };
    const any = someOf(named.map((b) => b.rule.where));
    if (type === 'event_count' || type === 'value_count') {
      const cond = (c['condition'] ?? {}) as Record<string, unknown>;
      const n =
        cond['gte'] !== undefined ? Number(cond['gte']) : cond['gt'] !== undefined ? Number(cond['gt']) + 1 : NaN;
      if (!Number.isInteger(n) || n < 1 || Object.keys(cond).some((k) => !['gte', 'gt', 'field'].includes(k))) {
        fail('condition must be gte or gt a whole number (at most N cannot be decided on a live stream)');
      }
      if (groupBy.some((g) => aliases[g])) fail('aliases are supported on temporal correlations only');
      if (type === 'value_count' && typeof cond['field'] !== 'string') fail('value_count needs condition.field');
      const compiled = compileRule(
        {
          ...base,
          type: type === 'event_count' ? 'threshold' : 'distinct',
          window_ms: windowMs,
          threshold: n,
          group_by: groupBy,
          detection: { _: {}, condition: '_' },
          ...(type === 'value_count' ? { distinct_field: cond['field'] } : {}),
        },
        { ...opts, source: file, literalTitle: true },
      );
      rules.push({ ...compiled, where: any });
    } else if (type === 'temporal' || type === 'temporal_ordered') {
      if (named.length < 2) fail('a temporal correlation needs two or more rules');
      const compiled = compileRule(
        { ...base, type: 'temporal', window_ms: windowMs },
        { ...opts, source: file, literalTitle: true },
      );
      rules.push({
        ...compiled,
        order: type === 'temporal_ordered' ? 'ordered' : 'any',
        steps: named.map((b) => ({ where: b.rule.where, groupBy: groupBy.map((g) => compilePath(fieldFor(g, b))) })),
      });
    } else {
      fail(`unsupported correlation type "${type}" (event_count, value_count, temporal, temporal_ordered)`);
    }
    for (const b of named) (c['generate'] === true ? generated : silenced).add(b.rule.id);
  }
  // A base rule alerts alone when any correlation naming it says generate: true.
  for (const id of generated) silenced.delete(id);
  return { rules, silenced };
}
