/**
 * Finds the test cases of a set of rule files and turns each into what the
 * stream would carry: its rule (compiled as the engine compiles it) and its
 * events in arrival order, each with `published` (its event time) and a
 * `uuid`, so the offline run and a live one see the same bytes.
 *
 * Where cases live: inside a hooklog rule (`cases:`), and in a sidecar
 * `<name>.cases.yaml` (or `.yml`) beside any rule file — the only place for a
 * Sigma or catalogue file, which is loaded as published and never edited.
 * A case that does not parse is a problem reported with its file and line; it
 * does not stop the others.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { LineCounter, isMap, isSeq, parseDocument, type Node } from 'yaml';
import { eventTimeMs } from '../consumer.js';
import { AlertingError } from '../errors.js';
import type { CompileOptions } from '../rules/compile.js';
import { caseFilesUnder, isCaseFile, loadRulePaths, ruleFileOf, ruleFilesUnder } from '../rules/sources.js';
import type { CompiledRule } from '../rules/types.js';
import { caseIssues, caseSchema, durationMs, instantMs, type CaseSpec } from './schema.js';

/** One event as a case sends it: its org and the LogEvent, with `published` and `uuid` set. */
export interface FeedEvent {
  readonly org: string;
  readonly event: Readonly<Record<string, unknown>>;
}

export interface LoadedCase {
  /** Where the case is written (the rule file, or its sidecar) and its line there. */
  readonly file: string;
  readonly line: number;
  readonly name: string;
  readonly rule: CompiledRule;
  readonly spec: CaseSpec;
  /** The events in arrival order. */
  readonly feed: readonly FeedEvent[];
  /** Event time the case moves on to at its end, when it says (`until`). */
  readonly untilMs: number | null;
}

/** A case that cannot run (invalid, or naming no rule of its file). */
export interface CaseProblem {
  readonly file: string;
  readonly line: number;
  readonly rule: string;
  readonly name: string;
  readonly message: string;
}

export interface RuleWithFile {
  readonly rule: CompiledRule;
  readonly file: string;
}

export interface LoadedCases {
  readonly rules: readonly RuleWithFile[];
  readonly cases: readonly LoadedCase[];
  readonly problems: readonly CaseProblem[];
}

interface RawCase {
  readonly file: string;
  readonly line: number;
  readonly value: unknown;
  /** The hooklog rule the case is written in (inline cases). */
  readonly inRule?: string;
}

/** The rule files `paths` name: sidecars stand for the rule file beside them; directories are walked. */
export function ruleFilesFor(paths: readonly string[]): { files: string[]; orphans: string[] } {
  const files = new Set<string>();
  const orphans: string[] = [];
  for (const p of paths) {
    if (!existsSync(p)) throw new AlertingError('rule_invalid', `${p}: no such rule file or directory`);
    if (statSync(p).isFile() && isCaseFile(p)) {
      const rule = ruleFileOf(p);
      if (rule) files.add(resolve(rule));
      else orphans.push(p);
      continue;
    }
    // Absolute, so a file reached twice (a configured directory and a built-in file in it) is tested once.
    for (const f of ruleFilesUnder([p])) files.add(resolve(f));
    if (statSync(p).isDirectory()) orphans.push(...caseFilesUnder([p]).filter((c) => !ruleFileOf(c)));
  }
  return { files: [...files], orphans };
}

/** Sidecars of a rule file: `x.yml` → `x.cases.yaml`, `x.cases.yml`. */
export function sidecarsOf(ruleFile: string): string[] {
  const stem = ruleFile.replace(/\.ya?ml$/i, '');
  return [`${stem}.cases.yaml`, `${stem}.cases.yml`].filter((f) => existsSync(f));
}

/** The cases of every rule under `paths`, with the rules (compiled with `opts`) they test. */
export function loadCases(paths: readonly string[], opts: CompileOptions = {}): LoadedCases {
  const { files, orphans } = ruleFilesFor(paths);
  const loaded = loadRulePaths(files, opts);
  const rules: RuleWithFile[] = loaded.flatMap((l) => l.rules.map((rule) => ({ rule, file: l.file })));
  const cases: LoadedCase[] = [];
  const problems: CaseProblem[] = orphans.map((file) => ({
    file,
    line: 1,
    rule: '',
    name: '',
    message: 'a cases file without a rule file beside it (x.cases.yaml goes beside x.yaml or x.yml)',
  }));
  for (const l of loaded) {
    const raw = [
      ...(l.format === 'hooklog' ? readCases(l.file, true, problems) : []),
      ...sidecarsOf(l.file).flatMap((s) => readCases(s, false, problems)),
    ];
    for (const r of raw) {
      const got = toCase(r, l.rules, l.file, opts);
      if ('message' in got) problems.push(got);
      else cases.push(got);
    }
  }
  return { rules, cases, problems };
}

/** Raw cases of a file with their lines: a hooklog rule list's `cases:` (inline), or a sidecar's list. */
function readCases(file: string, inline: boolean, problems: CaseProblem[]): RawCase[] {
  const lines = new LineCounter();
  const doc = parseDocument(readFileSync(file, 'utf8'), { lineCounter: lines, merge: true });
  const lineOf = (n: Node | null | undefined) => (n?.range ? lines.linePos(n.range[0]).line : 1);
  if (doc.errors.length) {
    problems.push({
      file,
      line: doc.errors[0]!.linePos?.[0].line ?? 1,
      rule: '',
      name: '',
      message: doc.errors[0]!.message,
    });
    return [];
  }
  const js = doc.toJS({ maxAliasCount: 10_000 }) as unknown;
  if (!isSeq(doc.contents) || !Array.isArray(js)) {
    if (!inline) problems.push({ file, line: 1, rule: '', name: '', message: 'a cases file holds a list of cases' });
    return [];
  }
  const items = doc.contents.items as Node[];
  if (!inline) return items.map((n, i) => ({ file, line: lineOf(n), value: js[i] }));
  const out: RawCase[] = [];
  items.forEach((n, i) => {
    const rule = js[i] as { id?: unknown; cases?: unknown } | null;
    const node = isMap(n) ? n.get('cases', true) : undefined;
    if (!rule || rule.cases === undefined) return;
    if (!isSeq(node) || !Array.isArray(rule.cases)) {
      problems.push({
        file,
        line: lineOf(n),
        rule: String(rule.id ?? ''),
        name: '',
        message: '`cases` must be a list',
      });
      return;
    }
    const at = node.items as Node[];
    rule.cases.forEach((c, j) => out.push({ file, line: lineOf(at[j]), value: c, inRule: String(rule.id ?? '') }));
  });
  return out;
}

function toCase(
  r: RawCase,
  fileRules: readonly CompiledRule[],
  ruleFile: string,
  opts: CompileOptions,
): LoadedCase | CaseProblem {
  const named = (r.value as { name?: unknown } | null)?.name;
  const problem = (message: string, rule = r.inRule ?? ''): CaseProblem => ({
    file: r.file,
    line: r.line,
    rule,
    name: typeof named === 'string' ? named : '',
    message,
  });
  const parsed = caseSchema.safeParse(r.value);
  if (!parsed.success) return problem(`invalid case: ${caseIssues(parsed.error)}`);
  const spec = parsed.data;
  if (r.inRule !== undefined && spec.rule !== undefined && spec.rule !== r.inRule)
    return problem(`a case inside rule ${r.inRule} names rule ${spec.rule}`);
  const id = r.inRule ?? spec.rule ?? (fileRules.length === 1 ? fileRules[0]!.id : undefined);
  if (id === undefined)
    return problem(
      `the file yields ${fileRules.length} rules (${fileRules.map((x) => x.id).join(', ') || 'none'}): say which with \`rule:\``,
    );
  let rule = fileRules.find((x) => x.id === id);
  if (rule && spec.placeholders) {
    // The rule as it compiles with this case's placeholders (Sigma |expand).
    const withThem = { ...opts, placeholders: { ...opts.placeholders, ...spec.placeholders } };
    rule = loadRulePaths([ruleFile], withThem)
      .flatMap((l) => l.rules)
      .find((x) => x.id === id);
  }
  if (!rule) return problem(`no rule ${id} in ${ruleFile}`, id);
  const start = instantMs(spec.start)!;
  const at = (v: string | number) => instantMs(v) ?? start + durationMs(v)!;
  return {
    file: r.file,
    line: r.line,
    name: spec.name,
    rule,
    spec,
    feed: feedOf(spec, rule.id, start, at),
    untilMs: spec.until === undefined ? null : at(spec.until),
  };
}

/** The case's events in arrival order, each with `published` and a `uuid` (derived from the case, so stable). */
function feedOf(spec: CaseSpec, ruleId: string, start: number, at: (v: string | number) => number): FeedEvent[] {
  const items = spec.events ?? [{ event: spec.event!, repeat: 1, every: '1s' }];
  const out: FeedEvent[] = [];
  let prev: number | null = null;
  items.forEach((item, i) => {
    const own = typeof item.event['published'] === 'string' ? eventTimeMs(item.event, NaN) : NaN;
    const base = item.at !== undefined ? at(item.at) : Number.isFinite(own) ? own : prev === null ? start : prev + 1000;
    const every = durationMs(item.every)!;
    for (let k = 0; k < item.repeat; k++) {
      const t = base + k * every;
      const event: Record<string, unknown> = structuredClone(item.event);
      // The event's own `published` is kept as written (it parses to `t`); otherwise the case's time is written in.
      if (k > 0 || item.at !== undefined || !Number.isFinite(own)) event['published'] = new Date(t).toISOString();
      const given = typeof event['uuid'] === 'string' && event['uuid'] !== '' ? event['uuid'] : null;
      if (given === null || k > 0) event['uuid'] = stableUuid(`${ruleId}\n${spec.name}\n${i}\n${k}\n${given ?? ''}`);
      out.push({ org: item.org ?? spec.org, event });
      prev = t;
    }
  });
  return out;
}

/** A UUID-shaped id (version 4 layout) from a hash: the same case always sends the same ids. */
function stableUuid(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
