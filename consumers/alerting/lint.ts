/**
 * `hooklog rules lint`: every problem in a set of rule files, each with its
 * file and line, without stopping at the first (loading for real stops there).
 *
 * Errors: YAML that does not parse, a rule that does not compile (unknown
 * modifier, a filter that does not parse, a `when` naming an unknown field…),
 * a rule id defined twice, a test case that cannot run (cases/load.ts).
 * Warnings: a filter attribute that is not a LogEvent field (it reads nothing
 * on a real event; aliased ones say what they read), an event path in a
 * title, severity or dedup expression that is not one, a catalogue file with
 * no filter (prose only).
 */
import { readFileSync } from 'node:fs';
import { isSeq, parseAllDocuments } from 'yaml';
import { compileRule } from './rules/compile.js';
import type { CompiledRule } from './rules/types.js';
import {
  FILTER_ALIASES,
  FilterSyntaxError,
  LOG_EVENT_FIELDS,
  filterPaths,
  parseFilter,
} from '../../platform/filter/parse.js';
import { normalKey } from './fields.js';
import { loadRulePaths, loadAnyRuleFile, ruleFilesUnder } from './rules/sources.js';
import { compileRisk } from './risk/declaration.js';
import { loadCases } from './cases/load.js';

export interface Problem {
  readonly file: string;
  readonly line: number;
  readonly severity: 'error' | 'warning';
  readonly message: string;
}

/** 1-based line of the first occurrence of `needle` in `text` at or after line `from`, else `fallback`. */
function lineOf(text: string, needle: string, fallback = 1, from = 1): number {
  const lines = text.split('\n');
  for (let i = from - 1; i < lines.length; i++) if (lines[i]!.includes(needle)) return i + 1;
  return fallback;
}

/** The filter text of a catalogue document, or of the hooklog rule `rule` (a list file). */
function filterTextOf(docs: ReturnType<typeof parseAllDocuments>, rule: string | undefined): string | undefined {
  const first = (Array.isArray(docs) ? docs : [docs])[0]?.toJS() as unknown;
  if (Array.isArray(first)) {
    const r = (first as Array<Record<string, unknown>>).find((x) => x?.['id'] === rule);
    const d = r?.['detection'] ?? r?.['first'] ?? r?.['then'];
    return typeof d === 'string' ? d : undefined;
  }
  const sl = (first as { detection?: { okta_systemlog?: Record<string, unknown> } } | null)?.detection?.okta_systemlog;
  const v = sl ? (sl['OIE'] ?? Object.values(sl).find((x) => typeof x === 'string')) : undefined;
  return typeof v === 'string' ? v : undefined;
}

function lintFile(file: string, out: Problem[]): void {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    out.push({ file, line: 1, severity: 'error', message: `cannot read: ${(err as Error).message}` });
    return;
  }
  const docs = parseAllDocuments(text);
  const yamlErrors = (Array.isArray(docs) ? docs : [docs]).flatMap((d) => d.errors);
  // A list of hooklog rules: each rule on its own, so one bad rule does not hide the others' problems.
  const first = (Array.isArray(docs) ? docs : [docs])[0];
  if (yamlErrors.length === 0 && first && isSeq(first.contents)) {
    const items = first.contents.items;
    const lineAt = (off: number | undefined) => (off === undefined ? 1 : text.slice(0, off).split('\n').length);
    items.forEach((node, i) => {
      const r = (first.toJS() as unknown[])[i];
      const start = lineAt((node as { range?: [number, number, number] }).range?.[0]);
      try {
        const rule = compileRule(r, { source: file });
        if (rule.filter) warnPaths(file, text, rule.filter, out, start);
        if (rule.labels && rule.kind !== 'scheduled') warnLabelPaths(file, text, rule.labels.paths, out, start);
      } catch (err) {
        let line = start;
        const cause = (err as { cause?: unknown }).cause;
        const f = (r as { detection?: unknown } | null)?.detection;
        if (cause instanceof FilterSyntaxError && typeof f === 'string')
          line = lineOf(text, f.trim().split('\n')[0]!.slice(0, 40), start, start);
        out.push({ file, line, severity: 'error', message: (err as Error).message.replace(`${file}: `, '') });
      }
    });
    return;
  }
  // Sigma drafts may start with a prose line; the loader copes, so only report what it cannot.
  let loaded;
  try {
    loaded = loadAnyRuleFile(file);
  } catch (err) {
    const msg = (err as Error).message.replace(`${file}: `, '');
    const yamlErr = yamlErrors[0];
    let line = yamlErr?.linePos?.[0]?.line ?? 1;
    const rule = /rule ([A-Za-z0-9._:-]+)/.exec(msg)?.[1];
    if (rule) line = lineOf(text, `id: ${rule}`, lineOf(text, rule, line));
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof FilterSyntaxError) {
      // Point at the line of the filter where parsing stopped.
      const f = filterTextOf(docs, rule);
      if (f !== undefined) {
        const first = f.trim().split('\n')[0]!.slice(0, 40);
        const trimmedLead = f.length - f.trimStart().length;
        line = lineOf(text, first, line) + (f.slice(trimmedLead, trimmedLead + cause.offset).match(/\n/g)?.length ?? 0);
      }
    }
    out.push({ file, line, severity: 'error', message: msg });
    return;
  }
  for (const note of loaded.notes) out.push({ file, line: 1, severity: 'warning', message: note });
  const filters: string[] = [];
  if (loaded.catalogue?.filter) filters.push(loaded.catalogue.filter);
  for (const r of loaded.rules) if (r.filter) filters.push(r.filter);
  for (const f of filters) warnPaths(file, text, f, out, 1);
}

/** Warnings for filter attributes that are not LogEvent fields. */
function warnPaths(file: string, text: string, filter: string, out: Problem[], from: number): void {
  let paths: string[];
  try {
    paths = filterPaths(parseFilter(filter));
  } catch {
    return;
  }
  for (const p of new Set(paths)) {
    const head = normalKey(p.split('.')[0]!);
    if (LOG_EVENT_FIELDS.has(head)) continue;
    const alias = FILTER_ALIASES[p.toLowerCase()];
    out.push({
      file,
      line: lineOf(text, p, from, from),
      severity: 'warning',
      message: alias
        ? `"${p}" is not a LogEvent field; read as ${alias}`
        : `"${p}" is not a LogEvent field: it matches nothing on a real event`,
    });
  }
}

/** Warnings for event paths read by a title, severity or dedup expression that are not LogEvent fields. */
function warnLabelPaths(
  file: string,
  text: string,
  paths: NonNullable<CompiledRule['labels']>['paths'],
  out: Problem[],
  from: number,
): void {
  for (const [p] of paths) {
    if (LOG_EVENT_FIELDS.has(normalKey(p.split('.')[0]!))) continue;
    out.push({
      file,
      line: lineOf(text, p, from, from),
      severity: 'warning',
      message: `"${p}" (in title, severity or dedup) is not a LogEvent field nor one of the rule's fields: it is always null`,
    });
  }
}

/**
 * The config's risk declarations for rules loaded as published (alerting.risk.rules): each must fit its rule
 * (risk/declaration.ts). `strict` (the config's own rule paths): an id no rule has is an error too.
 */
export interface RiskMapping {
  readonly file: string;
  readonly byId: Readonly<Record<string, unknown>>;
  readonly inline: readonly unknown[];
  readonly strict: boolean;
}

function lintRiskMapping(files: readonly string[], m: RiskMapping, out: Problem[]): void {
  const rules = new Map<string, Parameters<typeof compileRisk>[1]>();
  for (const r of m.inline) {
    try {
      const c = compileRule(r, { source: m.file });
      rules.set(c.id, c);
    } catch {
      // Reported by check-config; here only the mapping is linted.
    }
  }
  for (const l of loadRulePaths(files)) for (const r of l.rules) rules.set(r.id, r);
  for (const [id, decl] of Object.entries(m.byId)) {
    const rule = rules.get(id);
    const where = `alerting.risk.rules.${id}`;
    if (!rule) {
      if (m.strict)
        out.push({ file: m.file, line: 1, severity: 'error', message: `${where}: no loaded rule has this id` });
      continue;
    }
    try {
      compileRisk(decl, rule, where);
    } catch (err) {
      out.push({ file: m.file, line: 1, severity: 'error', message: (err as Error).message });
    }
  }
}

/** Lints every rule file under `paths` (and the config's risk mapping); problems sorted by file and line. */
export function lintPaths(paths: readonly string[], risk?: RiskMapping): Problem[] {
  const out: Problem[] = [];
  let files: string[];
  try {
    files = ruleFilesUnder(paths);
  } catch (err) {
    return [{ file: String(paths[0] ?? ''), line: 1, severity: 'error', message: (err as Error).message }];
  }
  for (const f of files) lintFile(f, out);
  // Across files: duplicate ids and correlations (only when every file loads).
  if (!out.some((p) => p.severity === 'error')) {
    try {
      const seen = new Map<string, string>();
      for (const l of loadRulePaths(files)) {
        for (const r of l.rules) {
          const prev = seen.get(r.id);
          if (prev)
            out.push({
              file: l.file,
              line: lineOf(readFileSync(l.file, 'utf8'), r.id),
              severity: 'error',
              message: `rule id ${r.id} also defined in ${prev}`,
            });
          else seen.set(r.id, l.file);
        }
      }
    } catch (err) {
      const msg = (err as Error).message;
      const file = files.find((f) => msg.startsWith(`${f}:`)) ?? files[0]!;
      out.push({ file, line: 1, severity: 'error', message: msg.replace(`${file}: `, '') });
    }
    if (risk && Object.keys(risk.byId).length > 0 && !out.some((p) => p.severity === 'error'))
      lintRiskMapping(files, risk, out);
  }
  // Test cases (inline and sidecars) that cannot run, once the rules load.
  if (!out.some((p) => p.severity === 'error')) {
    try {
      for (const p of loadCases(paths).problems)
        out.push({ file: p.file, line: p.line, severity: 'error', message: `case ${p.name || '?'}: ${p.message}` });
    } catch (err) {
      out.push({ file: String(paths[0] ?? ''), line: 1, severity: 'error', message: (err as Error).message });
    }
  }
  return out.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}
