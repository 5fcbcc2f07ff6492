/**
 * Rules: compiled once at load (config validation runs the very same
 * compilation, so what passes `hooklog check-config` is what runs), then
 * evaluated per request in order. Every matching rule contributes its
 * operations; a deny ends evaluation and discards them; `stop` ends it
 * keeping them. Operations for a token the request is not minting are left
 * out here — most importantly no access patch without `data.access`.
 */
import { compileAction, type CompiledAction, type LookupSource, type PatchOp, type TableResolver } from './actions.js';
import { compileConditions, type ConditionDeps, type Predicate } from './conditions.js';
import type { LookupTableConfig, RuleConfig } from './rule-schema.js';
import type { TokenContext } from './request.js';

export interface CompiledRule {
  readonly name: string;
  readonly matches: Predicate;
  readonly actions: readonly CompiledAction[];
  readonly stop: boolean;
}

export interface RuleIssue {
  /** Index of the rule in the hook's `rules`. */
  readonly index: number;
  readonly message: string;
}

/** What the rules decided for one request. */
export interface Decision {
  /** Names of the rules that matched, in order. */
  readonly matched: string[];
  /** Set when a rule denied: the errorSummary. */
  readonly deny: string | undefined;
  readonly idOps: PatchOp[];
  readonly accessOps: PatchOp[];
}

/**
 * Compiles every rule; collects one issue per broken rule (message naming it)
 * instead of stopping at the first, so one config check reports them all.
 */
export function compileRules(
  rules: readonly RuleConfig[],
  tables: TableResolver,
  deps?: ConditionDeps,
): { rules: CompiledRule[]; issues: RuleIssue[] } {
  const compiled: CompiledRule[] = [];
  const issues: RuleIssue[] = [];
  const names = new Map<string, number>();
  rules.forEach((rule, index) => {
    const label = `rule "${rule.name}"`;
    const prev = names.get(rule.name);
    if (prev !== undefined) issues.push({ index, message: `${label}: duplicate rule name (also rules.${prev})` });
    names.set(rule.name, index);
    try {
      const matches = compileConditions(rule.when, deps);
      const actions = rule.actions.map((a, i) => {
        try {
          return compileAction(a, tables);
        } catch (err) {
          throw new Error(`action ${i + 1}, ${(err as Error).message}`, { cause: err });
        }
      });
      if (actions.length > 1 && actions.some((a) => a.kind === 'deny'))
        throw new Error('a deny rule carries no other action');
      compiled.push({ name: rule.name, matches, actions, stop: rule.stop });
    } catch (err) {
      issues.push({ index, message: `${label}: ${(err as Error).message}` });
    }
  });
  return { rules: compiled, issues };
}

const EMPTY: LookupSource = { get: () => undefined };

/** A resolver for config validation: knows the declared table names, holds no data. */
export function placeholderTables(lookups: readonly LookupTableConfig[]): TableResolver {
  const names = new Set(lookups.map((l) => l.name));
  return (name) => (names.has(name) ? EMPTY : undefined);
}

/** Runs the rules over one request. Pure and synchronous: no I/O, nothing awaited. */
export function evaluate(rules: readonly CompiledRule[], ctx: TokenContext): Decision {
  const matched: string[] = [];
  const idOps: PatchOp[] = [];
  const accessOps: PatchOp[] = [];
  const hasId = ctx.idClaims !== undefined;
  const hasAccess = ctx.accessClaims !== undefined;
  for (let r = 0; r < rules.length; r++) {
    const rule = rules[r]!;
    if (!rule.matches(ctx)) continue;
    matched.push(rule.name);
    for (let a = 0; a < rule.actions.length; a++) {
      const action = rule.actions[a]!;
      if (action.kind === 'deny') return { matched, deny: action.summary, idOps: [], accessOps: [] };
      const op = action.build(ctx);
      if (op === undefined) continue;
      for (const token of action.tokens) {
        if (token === 'id' ? hasId : hasAccess) (token === 'id' ? idOps : accessOps).push(op);
      }
    }
    if (rule.stop) break;
  }
  return { matched, deny: undefined, idOps, accessOps };
}

/** Whether any rule asks for the user's risk (the hook then needs the risk view). */
export function usesRisk(rules: readonly RuleConfig[]): boolean {
  return rules.some((r) => r.when.risk !== undefined || r.when.not?.risk !== undefined);
}
