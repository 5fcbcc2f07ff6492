import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { AlertingError } from '../errors.js';
import { compileRule, type CompileOptions } from './compile.js';
import { loadRulePaths } from './sources.js';
import type { CompiledRule } from './types.js';

/** Compiles a YAML file holding a list of hooklog rules (rules/types.ts). */
export function loadRuleFile(file: string, opts: CompileOptions = {}): CompiledRule[] {
  const doc = parse(readFileSync(file, 'utf8')) as unknown;
  if (!Array.isArray(doc)) throw new AlertingError('rule_invalid', `${file}: expected a list of rules`);
  return doc.map((r) => compileRule(r, { ...opts, source: file }));
}

export interface RuleSources {
  /** Rules written inline in the config. */
  readonly rules?: readonly unknown[];
  /** YAML files of hooklog rules. */
  readonly ruleFiles?: readonly string[];
  /** Sigma files or directories. */
  readonly sigmaPaths?: readonly string[];
  /** Files or directories in any format, told apart by content (rules/sources.ts). Hunts are not stream rules. */
  readonly rulePaths?: readonly string[];
}

/** Every configured rule, compiled once at start. Duplicate ids are an error: ids make alert ids. */
export function loadAllRules(src: RuleSources, opts: CompileOptions = {}): CompiledRule[] {
  const all = [
    ...(src.rules ?? []).map((r) => compileRule(r, { ...opts, source: 'config' })),
    ...(src.ruleFiles ?? []).flatMap((f) => loadRuleFile(f, opts)),
    // Sigma paths load like rule paths (by content), so correlations find their base rules.
    ...loadRulePaths([...(src.sigmaPaths ?? []), ...(src.rulePaths ?? [])], opts).flatMap((l) => l.rules),
  ];
  const seen = new Map<string, string>();
  for (const r of all) {
    const prev = seen.get(r.id);
    if (prev) throw new AlertingError('rule_invalid', `rule id ${r.id} defined twice (${prev} and ${r.source})`);
    seen.set(r.id, r.source);
  }
  return all;
}
