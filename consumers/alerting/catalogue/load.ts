/**
 * The identity vendor's detection catalogue (okta/customer-detections), read
 * as published: one YAML document per detection or hunt, with the logic
 * under `detection.okta_systemlog.OIE` in the System Log filter language
 * (platform/filter/parse.ts) or, for the rest, described in prose beside a Splunk or
 * Datadog query under `detection.explanation` / `detection.splunk`.
 *
 * A filter file becomes a match rule (its id is the file's `id`, its title the
 * file's `title`). A prose-only file has no logic hooklog can read; the
 * shipped content pack (content/okta-catalogue.yaml) holds a rule or a
 * scheduled query written from it, named after the file, which `prose` points to.
 */
import { basename } from 'node:path';
import { AlertingError } from '../errors.js';
import { parseFilter, type FilterNode } from '../../../platform/filter/parse.js';
import { compileRule, type CompileOptions } from '../rules/compile.js';
import type { CompiledRule } from '../rules/types.js';

export interface CatalogueEntry {
  readonly file: string;
  /** `detection` or `hunt` (the catalogue's hunts/ folder, or a `hunt_` file name). */
  readonly kind: 'detection' | 'hunt';
  readonly id: string;
  readonly title: string;
  /** The System Log filter as published, when the file has one. */
  readonly filter: string | null;
  readonly tree: FilterNode | null;
  /** The match rule for the stream (filter files only). */
  readonly rule: CompiledRule | null;
  /** Prose-only files: what the file gives instead (splunk, datadog, explanation). */
  readonly prose: readonly string[];
}

/** Whether a parsed YAML document is in the catalogue's format (rather than Sigma). */
export function isCatalogueDoc(doc: unknown): boolean {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return false;
  const d = doc as Record<string, unknown>;
  const det = d['detection'];
  if (!det || typeof det !== 'object' || 'logsource' in d || 'condition' in det) return false;
  return ['okta_systemlog', 'splunk', 'explanation', 'datadog'].some((k) => k in det);
}

/** The filter text of a catalogue document: `okta_systemlog.OIE`, else its only string. */
function filterText(det: Record<string, unknown>): string | null {
  const sl = det['okta_systemlog'];
  if (!sl || typeof sl !== 'object') return null;
  const m = sl as Record<string, unknown>;
  const text = typeof m['OIE'] === 'string' ? m['OIE'] : Object.values(m).find((v) => typeof v === 'string');
  return typeof text === 'string' ? text.trim() : null;
}

/** One catalogue document → an entry; `file` names it in errors. */
export function catalogueEntry(doc: Record<string, unknown>, file: string, opts: CompileOptions = {}): CatalogueEntry {
  const det = doc['detection'] as Record<string, unknown>;
  const name = basename(file).replace(/\.ya?ml$/i, '');
  const kind = /(^|\/)hunts\//.test(file) || name.startsWith('hunt_') ? 'hunt' : 'detection';
  const id = typeof doc['id'] === 'string' && doc['id'].trim() ? doc['id'].trim() : name;
  const title = typeof doc['title'] === 'string' ? doc['title'].trim() : name;
  const filter = filterText(det);
  if (filter === null) {
    return {
      file,
      kind,
      id,
      title,
      filter: null,
      tree: null,
      rule: null,
      prose: Object.keys(det).filter((k) => k !== 'okta_systemlog'),
    };
  }
  let tree: FilterNode;
  try {
    tree = parseFilter(filter);
  } catch (err) {
    throw new AlertingError('rule_invalid', `${file}: detection.okta_systemlog: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const rule = compileRule(
    { id, title, type: 'match', detection: filter },
    { ...opts, source: file, literalTitle: true },
  );
  return { file, kind, id, title, filter, tree, rule, prose: [] };
}
