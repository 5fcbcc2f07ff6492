/**
 * Loads Sigma rules from YAML files as published and turns each into a
 * hooklog rule (rules/types.ts). Plain conditions become match rules; the
 * legacy aggregation syntax becomes a window rule:
 * `sel | count() by f > N` → threshold, `sel | count(g) by f > N` → distinct,
 * `a | near b` → sequence in either order — all over `detection.timeframe`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { compileRule, type CompileOptions } from '../rules/compile.js';
import type { CompiledRule } from '../rules/types.js';
import { AlertingError } from '../errors.js';

const LEVELS: Record<string, string> = {
  informational: 'informational',
  low: 'low',
  medium: 'medium',
  high: 'high',
  critical: 'critical',
};

/** `30s`, `10m`, `1h`, `2d` → milliseconds. */
export function parseTimeframe(s: unknown, where: string): number {
  const m = /^(\d+)\s*([smhd])$/.exec(String(s ?? '').trim());
  if (!m) throw new AlertingError('rule_invalid', `${where}: timeframe "${String(s)}" is not like 10m`);
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

/**
 * Parses the YAML. Some files published as drafts start with a line of prose
 * ("NOT READY YET") before the document; such text is not YAML, so we parse
 * from the first `title:` line and say so in `notes`.
 */
export function parseSigmaYaml(text: string, notes: string[]): Record<string, unknown> {
  try {
    return parse(text) as Record<string, unknown>;
  } catch (err) {
    const at = text.search(/^title:/m);
    if (at <= 0) throw new AlertingError('rule_invalid', `not YAML: ${(err as Error).message}`, { cause: err });
    notes.push(`ignored ${JSON.stringify(text.slice(0, at).trim())} before the document`);
    return parse(text.slice(at)) as Record<string, unknown>;
  }
}

/** Turns one parsed Sigma document into a hooklog rule spec (not yet compiled). */
export function sigmaToSpec(
  doc: Record<string, unknown>,
  fallbackId: string,
): { spec: Record<string, unknown>; order: 'ordered' | 'any' } {
  const where = `sigma ${fallbackId}`;
  const det = doc['detection'] as Record<string, unknown> | undefined;
  if (!det || typeof det !== 'object') throw new AlertingError('rule_invalid', `${where}: no detection`);
  const id = typeof doc['id'] === 'string' && doc['id'].trim() ? doc['id'].trim() : fallbackId;
  const base = {
    id,
    title: typeof doc['title'] === 'string' ? doc['title'].trim() : '',
    severity: LEVELS[String(doc['level'] ?? '').toLowerCase()] ?? 'medium',
    // Sigma's tags (attack.credential_access, …) select rules in `rules test --tag`; non-text entries are left out.
    tags: Array.isArray(doc['tags'])
      ? doc['tags'].filter((t): t is string => typeof t === 'string' && t !== '' && t.length <= 200).slice(0, 100)
      : [],
  };
  const cond = det['condition'];
  if (typeof cond !== 'string' || !cond.includes('|'))
    return { spec: { ...base, type: 'match', detection: det }, order: 'ordered' };

  const [left, right] = cond.split('|', 2).map((s) => s.trim()) as [string, string];
  const windowMs = parseTimeframe(det['timeframe'], where);
  const selections = Object.fromEntries(Object.entries(det).filter(([k]) => k !== 'condition' && k !== 'timeframe'));
  const near = /^near\s+(.+)$/i.exec(right);
  if (near) {
    return {
      spec: {
        ...base,
        type: 'sequence',
        window_ms: windowMs,
        first: { ...selections, condition: left },
        then: { ...selections, condition: near[1]! },
      },
      order: 'any',
    };
  }
  const count = /^count\(\s*([^)]*)\)\s*(?:by\s+(\S+)\s*)?(>=|>)\s*(\d+)$/i.exec(right);
  if (!count) throw new AlertingError('rule_invalid', `${where}: unsupported aggregation "${right}"`);
  const threshold = Number(count[4]) + (count[3] === '>' ? 1 : 0);
  return {
    spec: {
      ...base,
      type: count[1] ? 'distinct' : 'threshold',
      window_ms: windowMs,
      threshold,
      detection: { ...selections, condition: left },
      ...(count[1] ? { distinct_field: count[1] } : {}),
      ...(count[2] ? { group_by: [count[2]] } : {}),
    },
    order: 'ordered',
  };
}

export interface LoadedSigmaRule {
  readonly file: string;
  readonly rule: CompiledRule;
  readonly notes: readonly string[];
}

/** Loads one Sigma file. Throws AlertingError naming the file when it cannot be used. */
export function loadSigmaFile(file: string, opts: CompileOptions = {}): LoadedSigmaRule {
  const notes: string[] = [];
  try {
    const doc = parseSigmaYaml(readFileSync(file, 'utf8'), notes);
    const { spec, order } = sigmaToSpec(doc, basename(file).replace(/\.ya?ml$/, ''));
    return { file, rule: compileRule(spec, { ...opts, order, source: file, literalTitle: true }), notes };
  } catch (err) {
    if (err instanceof AlertingError && err.message.includes(file)) throw err;
    throw new AlertingError('rule_invalid', `${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Every `.yml`/`.yaml` under the given files or directories, sorted, loaded. */
export function loadSigmaPaths(paths: readonly string[], opts: CompileOptions = {}): LoadedSigmaRule[] {
  const files: string[] = [];
  const walk = (p: string) => {
    if (statSync(p).isDirectory()) for (const e of readdirSync(p).sort()) walk(join(p, e));
    else if (/\.ya?ml$/i.test(p)) files.push(p);
  };
  for (const p of paths) walk(p);
  return files.map((f) => loadSigmaFile(f, opts));
}
