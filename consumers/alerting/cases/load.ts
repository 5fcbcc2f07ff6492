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
import { enrichEvent, type Enrichment } from '../../../platform/enrichment/enrichment.js';
import { eventTimeMs } from '../consumer.js';
import { AlertingError } from '../errors.js';
import type { CompileOptions } from '../rules/compile.js';
import {
  caseFilesUnder,
  isCaseFile,
  loadAnyRuleFile,
  loadRulePaths,
  ruleFileOf,
  ruleFilesUnder,
  type LoadedFile,
} from '../rules/sources.js';
import type { CompiledRule } from '../rules/types.js';
import { shownValue } from '../rules/explain.js';
import { mockedState, type MockedState } from './mocks.js';
import { addActorContext, NO_IDENTITY, type ActorContextLookup } from '../identity/context.js';
import { caseIssues, caseSchema, durationMs, instantMs, type CaseSpec } from './schema.js';
import { staticIpLists, type IpListLookup } from '../../../platform/iplists/lists.js';

/** One event as a case sends it: its org and the LogEvent, with `published` and `uuid` set. */
export interface FeedEvent {
  readonly org: string;
  readonly event: Readonly<Record<string, unknown>>;
  /** What the GeoIP databases (`mocks.enrichment`) answered for it, as the stream's header would carry it. */
  readonly enrichment?: Enrichment | null;
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
  /** The state the rule starts from (`mocks:`). */
  readonly mocked: MockedState;
}

/**
 * Which rules and cases to run (`rules test --cases --rule … --tag … --case …`). Each value is an exact
 * text or a glob (`*` any characters, `?` one); several values of one filter: any of them; several filters:
 * all of them. Rule ids compare exactly, tags and case names without regard to case.
 */
export interface CaseFilter {
  readonly rules?: readonly string[];
  readonly tags?: readonly string[];
  readonly cases?: readonly string[];
}

function globRe(glob: string, flags: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, flags);
}

function matcher(globs: readonly string[] | undefined, caseless: boolean): ((s: string) => boolean) | null {
  if (!globs || globs.length === 0) return null;
  const res = globs.map((g) => globRe(g, caseless ? 'i' : ''));
  return (s) => res.some((r) => r.test(s));
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
    const under = ruleFilesUnder([p]);
    for (const f of under) files.add(resolve(f));
    const strays = statSync(p).isDirectory() ? caseFilesUnder([p]).filter((c) => !ruleFileOf(c)) : [];
    orphans.push(...strays);
    // A directory that holds no rule would make "0 rules, 0 cases: passed" out of a typo.
    if (under.length === 0 && strays.length === 0)
      throw new AlertingError('rule_invalid', `${p}: no rule file (.yaml or .yml) under this directory`);
  }
  return { files: [...files], orphans };
}

/** Sidecars of a rule file: `x.yml` → `x.cases.yaml`, `x.cases.yml`. */
export function sidecarsOf(ruleFile: string): string[] {
  const stem = ruleFile.replace(/\.ya?ml$/i, '');
  return [`${stem}.cases.yaml`, `${stem}.cases.yml`].filter((f) => existsSync(f));
}

/** The cases of every rule under `paths`, with the rules (compiled with `opts`) they test. */
export function loadCases(paths: readonly string[], opts: CompileOptions = {}, filter: CaseFilter = {}): LoadedCases {
  const { files, orphans } = ruleFilesFor(paths);
  const problems: CaseProblem[] = orphans.map((file) => ({
    file,
    line: 1,
    rule: '',
    name: '',
    message: 'a cases file without a rule file beside it (x.cases.yaml goes beside x.yaml or x.yml)',
  }));
  // Rules load with every list name allowed (a case may give the list); each case's rule is compiled again
  // below, strictly, with the lists it runs with.
  const missing = new Set<string>();
  const loaded = loadIsolated(files, { ...opts, lists: lenientLists(opts.lists, missing) }, problems);
  const caseOpts = missing.size ? { ...opts, strictLists: true } : opts;
  const ruleOk = matcher(filter.rules, false);
  const tagOk = matcher(filter.tags, true);
  const caseOk = matcher(filter.cases, true);
  const chosen = (r: CompiledRule) => (!ruleOk || ruleOk(r.id)) && (!tagOk || (r.tags ?? []).some(tagOk));
  let rules: RuleWithFile[] = loaded.flatMap((l) => l.rules.filter(chosen).map((rule) => ({ rule, file: l.file })));
  const cases: LoadedCase[] = [];
  for (const l of loaded) {
    const raw = [
      ...(l.format === 'hooklog' ? readCases(l.file, true, problems) : []),
      ...sidecarsOf(l.file).flatMap((s) => readCases(s, false, problems)),
    ];
    for (const r of raw) {
      const got = toCase(r, l.rules, l.file, caseOpts);
      if ('message' in got) {
        // A case that cannot run is shown when it could be one of those chosen.
        const rule = l.rules.find((x) => x.id === got.rule);
        if ((!rule || chosen(rule)) && (!caseOk || caseOk(got.name))) problems.push(got);
      } else if (chosen(got.rule) && (!caseOk || caseOk(got.name))) cases.push(got);
    }
  }
  // With --case, the rules are those with a chosen case: the others were not asked about.
  if (caseOk) rules = rules.filter((r) => cases.some((c) => c.rule.id === r.rule.id));
  return { rules, cases, problems };
}

/**
 * The rule files, each that does not load reported once as a problem (its file, the loader's message) while
 * the others load: one broken file must not hide the results of the rest. Together first, so Sigma
 * correlations resolve across files; one by one only when that fails, to find the broken ones.
 */
function loadIsolated(files: readonly string[], opts: CompileOptions, problems: CaseProblem[]): LoadedFile[] {
  try {
    return loadRulePaths(files, opts);
  } catch {
    const good: string[] = [];
    for (const f of files) {
      try {
        loadAnyRuleFile(f, opts);
        good.push(f);
      } catch (err) {
        problems.push({ file: f, line: lineOfError(err), rule: '', name: '', message: errorText(err, f) });
      }
    }
    try {
      return loadRulePaths(good, opts);
    } catch (err) {
      // Each file loads alone, together they do not (a correlation naming a rule of a broken file): say so
      // once, and run each file as it loads alone (its correlations unresolved) rather than none.
      problems.push({ file: good[0] ?? files[0] ?? '', line: 1, rule: '', name: '', message: errorText(err, '') });
      return good.map((f) => loadAnyRuleFile(f, opts));
    }
  }
}

/** The loader's message without the file name it starts with (the report shows the file). */
function errorText(err: unknown, file: string): string {
  const m = err instanceof Error ? err.message : String(err);
  const rest = file && m.startsWith(`${file}: `) ? m.slice(file.length + 2) : m;
  return `the rule file does not load: ${rest}`;
}

function lineOfError(err: unknown): number {
  const pos = (err as { linePos?: { line: number }[] } | null)?.linePos;
  return pos?.[0]?.line ?? 1;
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

/**
 * Lists that know every name (an unknown one is empty), noting the unknown names in `missing`: rule files
 * load once for all their cases, before a case's own `lists:` are known.
 */
function lenientLists(over: IpListLookup | undefined, missing: Set<string>): IpListLookup {
  return {
    has: (name) => {
      if (!over?.has(name)) missing.add(name);
      return true;
    },
    names: () => over?.names() ?? [],
    contains: (name, address) => over?.contains(name, address) ?? false,
  };
}

function toCase(
  r: RawCase,
  fileRules: readonly CompiledRule[],
  ruleFile: string,
  opts: CompileOptions & { readonly strictLists?: boolean },
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
  if (rule && (spec.placeholders || spec.lists || opts.strictLists)) {
    // The rule as it compiles with this case's placeholders (Sigma |expand) and IP lists.
    let lists;
    try {
      lists = spec.lists ? staticIpLists(spec.lists, opts.lists) : opts.lists;
    } catch (err) {
      return problem(`lists: ${(err as Error).message}`, id);
    }
    const withThem = {
      ...opts,
      placeholders: { ...opts.placeholders, ...spec.placeholders },
      ...(lists ? { lists } : {}),
    };
    try {
      rule = loadRulePaths([ruleFile], withThem)
        .flatMap((l) => l.rules)
        .find((x) => x.id === id);
    } catch (err) {
      return problem(errorText(err, ruleFile), id);
    }
  }
  if (!rule) return problem(`no rule ${id} in ${ruleFile}`, id);
  const start = instantMs(spec.start)!;
  const at = (v: string | number) => instantMs(v) ?? start + durationMs(v)!;
  const fed = feedOf(spec, rule.id, start, at);
  if (typeof fed === 'string') return problem(fed, rule.id);
  let feed: readonly FeedEvent[] = fed;
  const mocked = mockedState(spec, rule, feed[0]?.event, start);
  if ('error' in mocked) return problem(mocked.error, rule.id);
  // Looked up once per event, as the stream does when an event is appended (platform/enrichment/stream.ts).
  const lookup = mocked.enrichment;
  if (lookup) feed = feed.map((f) => ({ ...f, enrichment: enrichEvent(f.event, lookup) }));
  // Stream rules see each event with its actor's identity context, as the live consumer gives it: the case's
  // `mocks.identity`, else none (every actor has empty lists). Here, so explanations read what the rule read.
  if (rule.kind !== 'scheduled') feed = withIdentity(feed, mocked.identity ?? NO_IDENTITY);
  return {
    file: r.file,
    line: r.line,
    name: spec.name,
    rule,
    spec,
    feed,
    untilMs: spec.until === undefined ? null : at(spec.until),
    mocked,
  };
}

/** The feed's events, each a copy with its actor's identity context (identity/context.ts). */
function withIdentity(feed: readonly FeedEvent[], identity: ActorContextLookup): FeedEvent[] {
  return feed.map((f) => {
    const event = { ...f.event };
    addActorContext(event, f.org, identity);
    return { ...f, event };
  });
}

/**
 * The case's events in arrival order, each with `published` and a `uuid` (derived from the case, so stable);
 * or, for an event whose time nothing gives (no `at`, no valid `published`, no case `at`), why not: its time
 * is never made up in silence.
 */
function feedOf(
  spec: CaseSpec,
  ruleId: string,
  start: number,
  at: (v: string | number) => number,
): FeedEvent[] | string {
  const items = spec.events ?? [{ event: spec.event!, repeat: 1, every: '1s' }];
  const out: FeedEvent[] = [];
  let prev: number | null = null;
  for (const [i, item] of items.entries()) {
    const published = item.event['published'];
    const own = typeof published === 'string' ? eventTimeMs(item.event, NaN) : NaN;
    if (item.at === undefined && !Number.isFinite(own) && spec.at === undefined) {
      const which = spec.events ? `event ${i + 1}` : 'the event';
      const got =
        published === undefined ? 'has no `published`' : `has \`published\` ${shownValue(published)}, not a time`;
      return `${which} ${got}: give it a valid \`published\` (ISO-8601) or \`at:\`, or give the case \`at:\` (events without a time then follow it 1 s apart)`;
    }
    const base: number =
      item.at !== undefined ? at(item.at) : Number.isFinite(own) ? own : prev === null ? at(spec.at!) : prev + 1000;
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
  }
  return out;
}

/** A UUID-shaped id (version 4 layout) from a hash: the same case always sends the same ids. */
function stableUuid(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
