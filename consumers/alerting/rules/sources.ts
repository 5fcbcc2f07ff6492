/**
 * Rule files in any of the languages hooklog reads, told apart by content,
 * not by name or folder:
 *
 * - a YAML list → hooklog rules (rules/types.ts);
 * - a document whose `detection` has `okta_systemlog` (or only prose:
 *   `explanation`, `splunk`, `datadog`) → the vendor's catalogue (catalogue/load.ts);
 * - any other document with a `detection` → Sigma (sigma/load.ts).
 *
 * Directories are walked (`*.yml`, `*.yaml`, sorted), leaving out test-case
 * sidecars (`*.cases.yaml`, cases/load.ts).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { catalogueEntry, isCatalogueDoc, type CatalogueEntry } from '../catalogue/load.js';
import { AlertingError } from '../errors.js';
import { compileCorrelations, isCorrelationDoc, type CorrelationDoc, type SigmaBase } from '../sigma/correlation.js';
import { parseSigmaYaml, sigmaToSpec } from '../sigma/load.js';
import { compileRule, type CompileOptions } from './compile.js';
import type { CompiledRule } from './types.js';

export type RuleFormat = 'hooklog' | 'okta-catalogue' | 'sigma';

export interface LoadedFile {
  readonly file: string;
  readonly format: RuleFormat;
  /** Stream rules the file yields (none for a prose-only catalogue file). */
  readonly rules: readonly CompiledRule[];
  /** Catalogue files: the entry (filter, kind, prose). */
  readonly catalogue?: CatalogueEntry;
  readonly notes: readonly string[];
  /** Sigma: base rules and correlations, resolved across files by loadRulePaths. */
  readonly sigmaBases?: readonly SigmaBase[];
  readonly correlations?: readonly CorrelationDoc[];
}

/** Whether `file` holds test cases for the rule file beside it (`x.cases.yaml` for `x.yaml`), not rules. */
export function isCaseFile(file: string): boolean {
  return /\.cases\.ya?ml$/i.test(file);
}

/** The rule file a cases file belongs to (`x.cases.yaml` → `x.yaml` or `x.yml`), or null when there is none. */
export function ruleFileOf(caseFile: string): string | null {
  const stem = caseFile.replace(/\.cases\.ya?ml$/i, '');
  return [`${stem}.yaml`, `${stem}.yml`].find((f) => existsSync(f)) ?? null;
}

function yamlFilesUnder(paths: readonly string[], keep: (file: string) => boolean): string[] {
  const files: string[] = [];
  const walk = (p: string, named: boolean) => {
    if (statSync(p).isDirectory()) for (const e of readdirSync(p).sort()) walk(join(p, e), false);
    // A file named itself is read whatever its name ends with (a browser saves a download without one); in a
    // directory, only YAML files are rules.
    else if ((named || /\.ya?ml$/i.test(p)) && keep(p)) files.push(p);
  };
  for (const p of paths) walk(p, true);
  return files;
}

/** Every rule file under the given files or directories, sorted; test-case sidecars are not rule files. */
export function ruleFilesUnder(paths: readonly string[]): string[] {
  return yamlFilesUnder(paths, (f) => !isCaseFile(f));
}

/** Every test-case sidecar under the given directories, sorted. */
export function caseFilesUnder(paths: readonly string[]): string[] {
  return yamlFilesUnder(paths, isCaseFile);
}

/** Loads one file in whichever format its content is. Errors name the file. */
export function loadAnyRuleFile(file: string, opts: CompileOptions = {}): LoadedFile {
  const text = readFileSync(file, 'utf8');
  const notes: string[] = [];
  let doc: unknown;
  let docs: unknown[] = [];
  try {
    // Sigma files may hold several documents (a correlation and its base rules).
    const all = parseAllDocuments(text);
    if (Array.isArray(all) && all.length > 1 && all.every((d) => d.errors.length === 0)) {
      docs = all.map((d) => d.toJS() as unknown);
      doc = docs[0];
    } else {
      doc = parse(text);
    }
  } catch {
    // Sigma drafts may start with a line of prose; parseSigmaYaml copes and says so.
    doc = null;
  }
  try {
    if (Array.isArray(doc)) {
      return { file, format: 'hooklog', rules: doc.map((r) => compileRule(r, { ...opts, source: file })), notes };
    }
    if (isCatalogueDoc(doc)) {
      const entry = catalogueEntry(doc as Record<string, unknown>, file, opts);
      if (!entry.rule)
        notes.push(`no filter expression (${entry.prose.join(', ')}): see the content pack rule named after it`);
      return {
        file,
        format: 'okta-catalogue',
        rules: entry.rule && entry.kind === 'detection' ? [entry.rule] : [],
        catalogue: entry,
        notes,
      };
    }
    if (docs.length === 0) docs = [doc && typeof doc === 'object' ? doc : parseSigmaYaml(text, notes)];
    const stem = file.replace(/^.*\//, '').replace(/\.ya?ml$/i, '');
    const sigmaBases: SigmaBase[] = [];
    const correlations: CorrelationDoc[] = [];
    for (const [i, d] of docs.entries()) {
      if (isCorrelationDoc(d)) {
        correlations.push({ doc: d as Record<string, unknown>, file });
        continue;
      }
      if (!d || typeof d !== 'object' || !('detection' in d)) {
        throw new AlertingError(
          'rule_invalid',
          'not a rule file: expected a list of hooklog rules, a Sigma rule or a catalogue detection',
        );
      }
      const { spec, order } = sigmaToSpec(d as Record<string, unknown>, docs.length > 1 ? `${stem}-${i}` : stem);
      sigmaBases.push({
        doc: d as Record<string, unknown>,
        rule: compileRule(spec, { ...opts, order, source: file, literalTitle: true }),
        file,
      });
    }
    return { file, format: 'sigma', rules: sigmaBases.map((b) => b.rule), notes, sigmaBases, correlations };
  } catch (err) {
    if (err instanceof AlertingError && err.message.includes(file)) throw err;
    throw new AlertingError('rule_invalid', `${file}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Loads every file under `paths`. Sigma correlations are resolved against the
 * Sigma rules of all the files; the base rules they name stop alerting alone
 * unless the correlation says `generate: true`.
 */
export function loadRulePaths(paths: readonly string[], opts: CompileOptions = {}): LoadedFile[] {
  const files = ruleFilesUnder(paths).map((f) => loadAnyRuleFile(f, opts));
  const corrs = files.flatMap((f) => f.correlations ?? []);
  if (corrs.length === 0) return files;
  const { rules, silenced } = compileCorrelations(
    corrs,
    files.flatMap((f) => f.sigmaBases ?? []),
    opts,
  );
  return files.map((f) => ({
    ...f,
    rules: [
      ...f.rules.filter((r) => f.format !== 'sigma' || !silenced.has(r.id)),
      ...rules.filter((r) => r.source === f.file),
    ],
  }));
}
