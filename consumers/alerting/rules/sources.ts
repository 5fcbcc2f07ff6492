/**
 * Rule files in any of the languages hooklog reads, told apart by content,
 * not by name or folder:
 *
 * - a YAML list → hooklog rules (rules/types.ts);
 * - a document whose `detection` has `okta_systemlog` (or only prose:
 *   `explanation`, `splunk`, `datadog`) → the vendor's catalogue (catalogue/load.ts);
 * - any other document with a `detection` → Sigma (sigma/load.ts).
 *
 * Directories are walked (`*.yml`, `*.yaml`, sorted).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { catalogueEntry, isCatalogueDoc, type CatalogueEntry } from '../catalogue/load.js';
import { AlertingError } from '../errors.js';
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
}

/** Every rule file under the given files or directories, sorted. */
export function ruleFilesUnder(paths: readonly string[]): string[] {
  const files: string[] = [];
  const walk = (p: string) => {
    if (statSync(p).isDirectory()) for (const e of readdirSync(p).sort()) walk(join(p, e));
    else if (/\.ya?ml$/i.test(p)) files.push(p);
  };
  for (const p of paths) walk(p);
  return files;
}

/** Loads one file in whichever format its content is. Errors name the file. */
export function loadAnyRuleFile(file: string, opts: CompileOptions = {}): LoadedFile {
  const text = readFileSync(file, 'utf8');
  const notes: string[] = [];
  let doc: unknown;
  try {
    doc = parse(text);
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
      if (!entry.rule) notes.push(`no filter expression (${entry.prose.join(', ')}): see the content pack rule named after it`);
      return { file, format: 'okta-catalogue', rules: entry.rule && entry.kind === 'detection' ? [entry.rule] : [], catalogue: entry, notes };
    }
    const sigma = doc && typeof doc === 'object' ? (doc as Record<string, unknown>) : parseSigmaYaml(text, notes);
    if (!sigma || typeof sigma !== 'object' || !('detection' in sigma)) {
      throw new AlertingError('rule_invalid', 'not a rule file: expected a list of hooklog rules, a Sigma rule or a catalogue detection');
    }
    const { spec, order } = sigmaToSpec(sigma, file.replace(/^.*\//, '').replace(/\.ya?ml$/i, ''));
    return { file, format: 'sigma', rules: [compileRule(spec, { ...opts, order, source: file })], notes };
  } catch (err) {
    if (err instanceof AlertingError && err.message.includes(file)) throw err;
    throw new AlertingError('rule_invalid', `${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Loads every file under `paths`. */
export function loadRulePaths(paths: readonly string[], opts: CompileOptions = {}): LoadedFile[] {
  return ruleFilesUnder(paths).map((f) => loadAnyRuleFile(f, opts));
}
