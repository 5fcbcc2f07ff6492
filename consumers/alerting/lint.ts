/**
 * `hooklog rules lint`: every problem in a set of rule files, each with its
 * file and line, without stopping at the first (loading for real stops there).
 *
 * Errors: YAML that does not parse, a rule that does not compile (unknown
 * modifier, a filter that does not parse, a `when` naming an unknown field…),
 * a rule id defined twice, a test case that cannot run (cases/load.ts), and a
 * field path that can never match (a field a documented object does not have,
 * `outcome.reslt`; a path going on past a single value).
 *
 * Every field path a rule reads is checked against the LogEvent's fields
 * (schemas/logevent-fields.ts), nested segments included, as the engine reads
 * it (fields.ts: any case, `_` ignored, `okta.` and the ECS aliases): filters,
 * Sigma selections (and `|fieldref` values, correlations' group-by), `fields`,
 * `group_by`, `distinct_field`, and the paths title, severity and dedup
 * expressions read; in rule files and, linting the config's paths, in the
 * config's own `alerting.rules`. A near miss names the field meant. A field the event
 * itself, or an object the service adds to over time, does not have yet is a
 * warning (`strict`: an error); so is an aliased filter attribute (it says what
 * it reads), and a catalogue file with no filter (prose only).
 */
import { readFileSync } from 'node:fs';
import { isSeq, parseAllDocuments } from 'yaml';
import { compileRule } from './rules/compile.js';
import type { CompiledRule } from './rules/types.js';
import { FILTER_ALIASES, FilterSyntaxError, filterPaths, parseFilter } from '../../platform/filter/parse.js';
import { compilePath } from './fields.js';
import { allFieldPaths, lookupFieldPath } from '../../schemas/logevent-fields.js';
import { loadRulePaths, loadAnyRuleFile, ruleFilesUnder } from './rules/sources.js';
import { compileRisk } from './risk/declaration.js';
import { loadCases } from './cases/load.js';
import type { IpListLookup } from '../../platform/iplists/lists.js';

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

/** Options of a lint run. */
export interface LintOptions {
  /** Every unknown field is an error, also one the service may yet add (`rules lint --strict`). */
  readonly strict?: boolean;
  /** The configured IP lists (enrichment.ip_lists): a filter's `in list("x")` naming another is an error. */
  readonly lists?: IpListLookup;
}

const compileOpts = (o: LintOptions) => (o.lists ? { lists: o.lists } : {});

/** A field path a rule reads, and where: `filter` paths select events, `value` paths are read for their value. */
interface ReadPath {
  readonly path: string;
  readonly use: 'filter' | 'value';
  /** What reads it, when not the rule's detection (`group_by`, `fields.lat`, `title, severity or dedup`…). */
  readonly in?: string;
}

/** Field paths of a Sigma-style detection (selections and their `|fieldref` values), or of a filter expression. */
function detectionPaths(d: unknown): ReadPath[] {
  if (typeof d === 'string') {
    try {
      return filterPaths(parseFilter(d)).map((path) => ({ path, use: 'filter' }));
    } catch {
      return []; // reported where the rule is compiled
    }
  }
  if (!d || typeof d !== 'object' || Array.isArray(d)) return [];
  const out: ReadPath[] = [];
  const ofMap = (m: Record<string, unknown>) => {
    for (const [key, v] of Object.entries(m)) {
      const [field, ...mods] = key.split('|');
      if (field) out.push({ path: field, use: 'filter' });
      if (mods.some((x) => x.toLowerCase() === 'fieldref'))
        for (const f of Array.isArray(v) ? v : [v]) out.push({ path: String(f), use: 'filter' });
    }
  };
  for (const [name, sel] of Object.entries(d)) {
    if (name === 'condition' || name === 'timeframe') continue;
    // A list of strings is keywords (searched anywhere in the event): no field.
    if (Array.isArray(sel)) for (const m of sel) if (m && typeof m === 'object') ofMap(m as Record<string, unknown>);
    if (sel && typeof sel === 'object' && !Array.isArray(sel)) ofMap(sel as Record<string, unknown>);
  }
  return out;
}

/** Every field path a hooklog rule (its spec as written, and as compiled) reads. */
function rulePaths(spec: Record<string, unknown>, rule: CompiledRule): ReadPath[] {
  if (rule.kind === 'scheduled') return []; // SQL over tables: its names are columns, not event paths
  const out = [spec['detection'], spec['first'], spec['then']].flatMap(detectionPaths);
  const fields = spec['fields'];
  if (fields && typeof fields === 'object')
    for (const [name, p] of Object.entries(fields)) out.push({ path: String(p), use: 'value', in: `fields.${name}` });
  if (Array.isArray(spec['group_by']))
    for (const p of spec['group_by']) out.push({ path: String(p), use: 'value', in: 'group_by' });
  if (typeof spec['distinct_field'] === 'string')
    out.push({ path: spec['distinct_field'], use: 'value', in: 'distinct_field' });
  for (const [p] of rule.labels?.paths ?? []) out.push({ path: p, use: 'value', in: 'title, severity or dedup' });
  return out;
}

/** Field paths of a Sigma document: a rule's selections, a correlation's group-by and aliased fields. */
function sigmaPaths(doc: Record<string, unknown>): ReadPath[] {
  const c = doc['correlation'];
  if (c && typeof c === 'object') {
    const corr = c as Record<string, unknown>;
    const aliases = (corr['aliases'] ?? {}) as Record<string, unknown>;
    const out: ReadPath[] = [];
    for (const g of Array.isArray(corr['group-by']) ? corr['group-by'] : []) {
      const a = aliases[String(g)];
      if (a && typeof a === 'object')
        for (const f of Object.values(a)) out.push({ path: String(f), use: 'value', in: 'aliases' });
      else out.push({ path: String(g), use: 'value', in: 'group-by' });
    }
    const cond = corr['condition'] as Record<string, unknown> | undefined;
    if (typeof cond?.['field'] === 'string') out.push({ path: cond['field'], use: 'value', in: 'condition.field' });
    return out;
  }
  return detectionPaths(doc['detection']);
}

/** Edit distance (Levenshtein) of two short names. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

const norm = (s: string) => s.toLowerCase().replaceAll('_', '');
/** Every LogEvent field path, in normal form → the service's spelling (for suggestions across levels). */
const ALL_PATHS = new Map(allFieldPaths().map((p) => [norm(p), p]));

/**
 * The path the author likely meant: a field beside the unknown one within a small edit distance
 * (`outcome.reslt` → `outcome.result`), else a known path the written one ends (`debugData.x` →
 * `debugContext.debugData.x`).
 */
function suggestion(raw: readonly string[], at: number, prefix: readonly string[], siblings: readonly string[]) {
  const seg = norm(raw[at]!);
  const rest = raw.slice(at + 1);
  let best: string | undefined;
  let bestD = Math.max(1, Math.floor(seg.length / 3)) + 1;
  for (const s of siblings) {
    const d = distance(seg, norm(s));
    // Only a field the rest of the path goes on from (not `authenticationStep` for `authenticatorContext.x`).
    if (d < bestD && lookupFieldPath(compilePath([...prefix, s, ...rest].join('.'))).known) [best, bestD] = [s, d];
  }
  if (best !== undefined) return [...prefix, best, ...rest].join('.');
  // A path written from the middle: the shortest known path that ends with what was written, up to a free-form map.
  for (let take = raw.length - at; take >= 1; take--) {
    const tail = norm(raw.slice(at, at + take).join('.'));
    // The service's own fields first: hooklog's enrichment (`enrichment.geo.city`) only when none of them fits,
    // since it is there only where GeoIP is configured.
    const rank = (n: string) => (n.startsWith('enrichment.') ? 1 : 0);
    const hit = [...ALL_PATHS]
      .filter(([n]) => n.endsWith(`.${tail}`))
      .sort((x, y) => rank(x[0]) - rank(y[0]) || x[0].length - y[0].length)[0];
    if (hit) return [hit[1], ...raw.slice(at + take)].join('.');
  }
  return undefined;
}

/** The problem with one path a rule reads, or null when it is a LogEvent field (or under a free-form one). */
function pathProblem(r: ReadPath, strict: boolean): { severity: Problem['severity']; message: string } | null {
  const p = r.path.trim();
  const where = r.in ? ` (in ${r.in})` : '';
  if (r.use === 'filter' && !r.in) {
    const alias = FILTER_ALIASES[p.toLowerCase()];
    if (alias) return { severity: 'warning', message: `"${p}" is not a LogEvent field; read as ${alias}` };
  }
  const segs = compilePath(p);
  const v = lookupFieldPath(segs);
  if (v.known) return null;
  const raw = segs.raw ?? segs;
  const outcome = r.use === 'filter' ? 'it matches nothing' : 'it is always null';
  const why = !v.never
    ? `${outcome} on a real event`
    : v.siblings.length === 0
      ? `${v.prefix.join('.')} is a single value with no fields, so ${outcome} whatever the event`
      : `${v.prefix.join('.') || 'a LogEvent'} has no field "${raw[v.at]}", so ${outcome} whatever the event`;
  const meant = suggestion(raw, v.at, v.prefix, v.siblings);
  const fieldsToo = r.in === 'title, severity or dedup' ? " nor one of the rule's fields" : '';
  return {
    severity: v.never || strict ? 'error' : 'warning',
    message: `"${p}"${where} is not a LogEvent field${fieldsToo}: ${why}${meant ? `; did you mean ${meant}?` : ''}`,
  };
}

/** Problems with the field paths one rule (or document) reads, each at the first line from `from` naming it. */
function checkPaths(
  file: string,
  text: string,
  paths: readonly ReadPath[],
  out: Problem[],
  from: number,
  o: LintOptions,
): void {
  const seen = new Set<string>();
  for (const r of paths) {
    const k = `${r.path}\u0000${r.in ?? ''}`;
    if (seen.has(k)) continue;
    seen.add(k);
    const problem = pathProblem(r, o.strict === true);
    if (problem) out.push({ file, line: lineOf(text, r.path.trim(), from, from), ...problem });
  }
}

function lintFile(file: string, out: Problem[], o: LintOptions): void {
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
        const rule = compileRule(r, { ...compileOpts(o), source: file });
        checkPaths(file, text, rulePaths(r as Record<string, unknown>, rule), out, start, o);
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
    loaded = loadAnyRuleFile(file, compileOpts(o));
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
  if (loaded.catalogue?.filter) checkPaths(file, text, detectionPaths(loaded.catalogue.filter), out, 1, o);
  const sigmaDocs = [...(loaded.sigmaBases ?? []), ...(loaded.correlations ?? [])].map((b) => b.doc);
  for (const d of sigmaDocs) checkPaths(file, text, sigmaPaths(d), out, 1, o);
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

function lintRiskMapping(files: readonly string[], m: RiskMapping, out: Problem[], o: LintOptions): void {
  const rules = new Map<string, Parameters<typeof compileRisk>[1]>();
  for (const r of m.inline) {
    try {
      const c = compileRule(r, { ...compileOpts(o), source: m.file });
      rules.set(c.id, c);
    } catch {
      // Reported by check-config; here only the mapping is linted.
    }
  }
  for (const l of loadRulePaths(files, compileOpts(o))) for (const r of l.rules) rules.set(r.id, r);
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

/** The field paths of the config's own rules (alerting.rules), each at the line of its id in the config file. */
function lintInlineRules(m: RiskMapping, out: Problem[], o: LintOptions): void {
  let text = '';
  try {
    text = readFileSync(m.file, 'utf8');
  } catch {
    // A config from the environment or built in: no file to point into; line 1.
  }
  for (const r of m.inline) {
    let rule: CompiledRule;
    try {
      rule = compileRule(r, { ...compileOpts(o), source: m.file });
    } catch {
      continue; // check-config and start refuse it, saying why
    }
    const from = lineOf(text, `id: ${rule.id}`, lineOf(text, rule.id, 1));
    checkPaths(m.file, text, rulePaths(r as Record<string, unknown>, rule), out, from, o);
  }
}

/** Lints every rule file under `paths` (and the config's risk mapping); problems sorted by file and line. */
export function lintPaths(paths: readonly string[], risk?: RiskMapping, o: LintOptions = {}): Problem[] {
  const out: Problem[] = [];
  let files: string[];
  try {
    files = ruleFilesUnder(paths);
  } catch (err) {
    return [{ file: String(paths[0] ?? ''), line: 1, severity: 'error', message: (err as Error).message }];
  }
  for (const f of files) lintFile(f, out, o);
  // The config's own rules, when it is the config's rules that are linted.
  if (risk?.strict) lintInlineRules(risk, out, o);
  // Across files: duplicate ids and correlations (only when every file loads).
  if (!out.some((p) => p.severity === 'error')) {
    try {
      const seen = new Map<string, string>();
      for (const l of loadRulePaths(files, compileOpts(o))) {
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
      lintRiskMapping(files, risk, out, o);
  }
  // Test cases (inline and sidecars) that cannot run, once the rules load.
  if (!out.some((p) => p.severity === 'error')) {
    try {
      for (const p of loadCases(paths, compileOpts(o)).problems)
        out.push({ file: p.file, line: p.line, severity: 'error', message: `case ${p.name || '?'}: ${p.message}` });
    } catch (err) {
      out.push({ file: String(paths[0] ?? ''), line: 1, severity: 'error', message: (err as Error).message });
    }
  }
  return out.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}
