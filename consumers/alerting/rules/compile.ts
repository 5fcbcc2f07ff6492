import { AlertingError } from '../errors.js';
import { compilePath, type FieldPath } from '../fields.js';
import { needsOf, withNeeds } from '../prefilter.js';
import { compileFilter } from '../filter/evaluate.js';
import { compileExpr, type Expr } from '../state/expr.js';
import { eventTime, readFields } from '../state/values.js';
import { compileDetection, type DetectionOptions, type Predicate } from '../sigma/detection.js';
import { ruleSpecSchema, type CompiledRule, type RuleSpec } from './types.js';
import { compileRisk } from '../risk/declaration.js';
import { compileGrouping } from '../grouping/declaration.js';
import { allOf, explainer, whenLeaf, type Explained } from './explain.js';

const always: Predicate = () => true;
const never: Predicate = () => false;

export interface CompileOptions extends DetectionOptions {
  /** Applied when a rule sets no suppress_ms. */
  readonly defaultSuppressMs?: number;
  readonly source?: string;
  /** Sequence order; Sigma `near` makes it `any`. */
  readonly order?: 'ordered' | 'any';
  /** Rules loaded as published (Sigma, the catalogue): the title is text, never a `{{ }}` template. */
  readonly literalTitle?: boolean;
}

/**
 * Validates and compiles one rule. Cross-field mistakes (a threshold rule
 * without window_ms, a sequence without `then`) fail here, at boot, naming
 * the rule and its source.
 */
export function compileRule(input: unknown, opts: CompileOptions = {}): CompiledRule {
  const source = opts.source ?? 'config';
  const parsed = ruleSpecSchema.safeParse(input);
  if (!parsed.success) {
    const id = (input as { id?: unknown } | null)?.id;
    throw new AlertingError(
      'rule_invalid',
      `${source}: rule ${String(id ?? '?')}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const spec: RuleSpec = parsed.data;
  const where = `${source}: rule ${spec.id}`;
  const need = (ok: unknown, what: string) => {
    if (!ok) throw new AlertingError('rule_invalid', `${where}: type ${spec.type} needs ${what}`);
  };
  if (spec.type !== 'match' && spec.type !== 'stateful' && spec.type !== 'scheduled') need(spec.window_ms, 'window_ms');
  if (spec.type === 'scheduled') {
    need((spec.sql === undefined) !== (spec.query === undefined), 'exactly one of `sql` and `query`');
    need(spec.every_ms && spec.lookback_ms, 'every_ms and lookback_ms');
    need(spec.key.length, 'key (the result columns that identify a finding)');
    if (spec.sql !== undefined && /\$\{|'\s*\+/.test(spec.sql))
      throw new AlertingError('rule_invalid', `${where}: sql must take values as {name:Type} parameters`);
  }
  if (spec.type === 'stateful') need(spec.when, '`when`');
  if (spec.type === 'first_seen') need(spec.distinct_field, 'distinct_field (the value that is new or not)');
  if (spec.type === 'sequence') need(spec.first && spec.then, '`first` and `then`');
  else if (!['absence', 'stateful', 'first_seen', 'scheduled', 'temporal'].includes(spec.type))
    need(spec.detection, '`detection`');
  if (spec.type === 'distinct') need(spec.distinct_field, 'distinct_field');
  const det = (d: Record<string, unknown> | string | undefined, fallback: Predicate, part: string): Predicate => {
    if (d === undefined) return fallback;
    if (typeof d !== 'string') return compileDetection(d, opts, `${where}.${part}`);
    try {
      return compileFilter(d);
    } catch (err) {
      throw new AlertingError('rule_invalid', `${where}.${part}: ${(err as Error).message}`, { cause: err });
    }
  };
  const fields = Object.entries(spec.fields).map(([n, p]) => [n, compilePath(p)] as const);
  const stateful = spec.type === 'stateful' || spec.type === 'first_seen';
  const when = spec.when
    ? compileExpr(spec.when, {
        names: new Set(Object.keys(spec.fields)),
        prev: spec.type === 'stateful',
        timeZone: spec.time_zone,
        where: `${where}.when`,
      })
    : null;
  let wherePred = spec.type === 'sequence' ? det(spec.first, never, 'first') : det(spec.detection, always, 'detection');
  if (when && !stateful) {
    // A stateless rule's `when` is one more condition on each event.
    const base = wherePred;
    wherePred = withNeeds(
      (e) => base(e) && when({ cur: readFields(fields, e, eventTime(e)), prev: null }) === true,
      needsOf(base),
    );
  }
  const groupBy = spec.group_by.map(compilePath);
  const explain = explainOf(spec, opts, when, fields);
  const grouping = compileGrouping(spec, where, opts);
  let risk;
  if (spec.risk) {
    try {
      risk = compileRisk(spec.risk, { id: spec.id, kind: spec.type, groupBy }, where);
    } catch (err) {
      throw new AlertingError('rule_invalid', (err as Error).message, { cause: err });
    }
  }
  return {
    id: spec.id,
    title: grouping.title,
    severity: grouping.severity,
    kind: spec.type,
    source,
    where: wherePred,
    ...(typeof spec.detection === 'string' ? { filter: spec.detection } : {}),
    ...(spec.tags.length ? { tags: spec.tags } : {}),
    ...(explain ? { explain } : {}),
    then: det(spec.then, never, 'then'),
    groupBy,
    windowMs: spec.window_ms ?? 0,
    threshold: spec.threshold,
    distinct: spec.distinct_field ? compilePath(spec.distinct_field) : null,
    // A grouped rule counts its findings into the open alert: suppression (dropping them) does not apply.
    suppressMs: grouping.periodMs !== undefined ? 0 : (spec.suppress_ms ?? opts.defaultSuppressMs ?? 0),
    order: opts.order ?? 'ordered',
    fields,
    when: stateful ? when : null,
    maxKeys: spec.max_keys,
    maxValues: spec.max_values,
    ttlMs: spec.ttl_ms ?? 30 * 86_400_000,
    ...(risk ? { risk } : {}),
    ...(grouping.labels ? { labels: grouping.labels } : {}),
    ...(grouping.periodMs !== undefined ? { dedupPeriodMs: grouping.periodMs } : {}),
    ...(spec.type === 'scheduled'
      ? {
          scheduled: {
            ...(spec.sql !== undefined ? { sql: spec.sql } : {}),
            ...(spec.query !== undefined ? { query: spec.query } : {}),
            params: spec.params,
            textParams: Object.fromEntries(Object.entries(spec.params).map(([k, v]) => [k, String(v)])),
            everyMs: spec.every_ms!,
            lookbackMs: spec.lookback_ms!,
            key: spec.key,
            timeColumn: spec.time_column,
          },
        }
      : {}),
  };
}

/**
 * The rule's detection as an explainer (rules/explain.ts), compiled on first use: only a failing test case
 * asks. A sequence explains both steps; `when` is one more condition beside the detection — a stateful rule's
 * only when the caller gives the previous event of the group (`prev`, null for none) it was judged with.
 */
function explainOf(
  spec: RuleSpec,
  opts: CompileOptions,
  when: Expr | null,
  fields: readonly (readonly [string, FieldPath])[],
): CompiledRule['explain'] {
  const parts: Array<[string, string | Record<string, unknown>]> =
    spec.type === 'sequence'
      ? [
          ['first', spec.first!],
          ['then', spec.then!],
        ]
      : spec.detection !== undefined
        ? [['', spec.detection]]
        : [];
  if (parts.length === 0 && !when) return undefined;
  let built: Array<[string, (event: unknown) => Explained]> | undefined;
  return (event, prev) => {
    built ??= parts.map(([label, d]) => [label, explainer(d, opts)]);
    const items = built.map(([label, ex]) => (label ? { ...ex(event), label } : ex(event)));
    const withPrev = spec.type === 'stateful';
    if (when && (!withPrev || prev !== undefined)) {
      const cur = readFields(fields, event, eventTime(event));
      const before = withPrev && prev ? prev : null;
      const seen = { ...cur, ...Object.fromEntries(Object.entries(before ?? {}).map(([k, v]) => [`prev.${k}`, v])) };
      items.push(
        whenLeaf(spec.when!, when({ cur, prev: before }) === true, withPrev && !prev ? { ...seen, prev: null } : seen),
      );
    }
    return allOf(items);
  };
}
