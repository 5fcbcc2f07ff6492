/**
 * Panther's labelled Okta cases against hooklog's equivalent rules
 * (content/panther-okta.yaml), through the test-case sidecar format: the
 * corpus becomes `panther-okta.cases.yaml` beside a copy of the rule file and
 * runs the way `hooklog rules test --cases` runs it. Window rules get
 * `threshold` copies of the event within seconds (distinct values of the
 * counted field for distinct rules), which is what "this event counts towards
 * the detection" means for them, and the same less one copy must not fire.
 * Prints a per-rule report; every case must pass.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CORPORA_DIR } from '../../test/support/corpus.js';
import { loadCases } from './cases/load.js';
import { renderTable } from './cases/report.js';
import { runCases } from './cases/run.js';
import { CONTENT_DIR } from './index.js';
import { loadRuleFile } from './rules/load.js';
import type { CompiledRule } from './rules/types.js';

const CASES = join(CORPORA_DIR, 'panther', 'cases.jsonl');
const dir = mkdtempSync(join(tmpdir(), 'hooklog-panther-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface PantherRule {
  rule_id: string;
  /** Panther's DedupPeriodMinutes; null when the rule leaves Panther's default of 60. */
  dedup_minutes: number | null;
}

interface Case {
  rule_id: string;
  expect: boolean;
  event: Record<string, unknown>;
}

/** The events of a corpus case for `rule`: one, or `n` copies for window rules (distinct: each its own target ids). */
function events(rule: CompiledRule, event: Record<string, unknown>, n: number): unknown[] {
  if (rule.kind !== 'distinct') return [{ event, repeat: n }];
  return Array.from({ length: n }, (_, i) => {
    const e = structuredClone(event);
    // Copies are other events: the same uuid would be the same event again (folded by the engine).
    if (i > 0) delete e['uuid'];
    if (Array.isArray(e['target']))
      e['target'] = (e['target'] as Record<string, unknown>[]).map((t) => ({ ...t, id: `${String(t['id'])}-${i}` }));
    return { at: `${i}s`, event: e };
  });
}

describe('Panther labelled cases, as a sidecar', () => {
  const corpus = readFileSync(CASES, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Case);
  const rules = new Map(loadRuleFile(join(CONTENT_DIR, 'panther-okta.yaml')).map((r) => [r.id, r]));

  it('every case passes; report per rule', async () => {
    const sidecar = corpus.flatMap((c, i) => {
      const rule = rules.get(c.rule_id);
      const window = rule && (rule.kind === 'threshold' || rule.kind === 'distinct');
      const n = window ? rule.threshold : 1;
      // Panther's test logs may carry no `published`: the case's `at` times those, as the anchor's harness did.
      const base = { rule: c.rule_id, name: `panther case ${i + 1}`, start: '2024-05-01T10:00:00Z', at: '0s' };
      return [
        { ...base, alert: c.expect, events: rule ? events(rule, c.event, n) : [{ event: c.event }] },
        // One event short of the threshold: a window rule must stay silent.
        ...(window && c.expect
          ? [{ ...base, name: `panther case ${i + 1}, one short`, alert: false, events: events(rule, c.event, n - 1) }]
          : []),
      ];
    });
    copyFileSync(join(CONTENT_DIR, 'panther-okta.yaml'), join(dir, 'panther-okta.yaml'));
    writeFileSync(join(dir, 'panther-okta.cases.yaml'), stringify(sidecar));

    const report = await runCases(loadCases([dir]), { allowedLatenessMs: 60_000 });
    const fromCorpus = report.results.filter((r) => r.file.endsWith('.cases.yaml'));
    const perRule = new Map<string, { passed: number; failed: number }>();
    for (const r of fromCorpus) {
      const row = perRule.get(r.rule) ?? { passed: 0, failed: 0 };
      row[r.status === 'passed' ? 'passed' : 'failed']++;
      perRule.set(r.rule, row);
    }
    console.table([...perRule].map(([rule, r]) => ({ rule, ...r })));
    expect(
      fromCorpus.filter((r) => r.status !== 'passed'),
      renderTable(report),
    ).toEqual([]);
    expect(fromCorpus.length).toBe(sidecar.length);
    expect(perRule.size).toBe(30);
    // Every rule named by the corpus is one of the pack's.
    for (const c of corpus) expect(rules.has(c.rule_id), c.rule_id).toBe(true);
    expect(sidecar.length).toBeGreaterThan(corpus.length);
  });

  it("groups each rule's findings for Panther's dedup period", () => {
    const meta = readFileSync(join(CORPORA_DIR, 'panther', 'rules.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as PantherRule);
    expect(meta).toHaveLength(30);
    const periods = meta.map((m) => [m.rule_id, rules.get(m.rule_id)?.dedupPeriodMs]);
    expect(periods).toEqual(meta.map((m) => [m.rule_id, (m.dedup_minutes ?? 60) * 60_000]));
  });
});
