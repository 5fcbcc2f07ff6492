/**
 * Panther's labelled Okta cases replayed through hooklog's equivalent rules
 * (content/panther-okta.yaml): each case's event goes through a fresh engine
 * holding the named rule; window rules get `threshold` copies of the event
 * (distinct ids, and distinct values of the counted field) within a minute,
 * which is what "this event counts towards the detection" means for them.
 * Prints a per-rule report; every expected-true case must fire and every
 * expected-false case must not, except those listed in EXCEPTIONS.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CORPORA_DIR } from '../../test/support/corpus.js';
import { PartitionEngine } from './engine.js';
import { loadRuleFile } from './rules/load.js';
import type { CompiledRule } from './rules/types.js';

const CASES = join(CORPORA_DIR, 'panther', 'cases.jsonl');
const RULES = fileURLToPath(new URL('./content/panther-okta.yaml', import.meta.url));

/** Detections that hooklog's rule language cannot express, and why. */
const EXCEPTIONS: Record<string, string> = {};

interface Case {
  rule_id: string;
  expect: boolean;
  event: Record<string, unknown>;
}

function copies(rule: CompiledRule, event: Record<string, unknown>): Record<string, unknown>[] {
  const n = rule.kind === 'threshold' || rule.kind === 'distinct' ? rule.threshold : 1;
  return Array.from({ length: n }, (_, i) => {
    const e = structuredClone(event);
    if (rule.kind === 'distinct' && Array.isArray(e['target'])) {
      (e['target'] as Record<string, unknown>[]) = (e['target'] as Record<string, unknown>[]).map((t) => ({
        ...t,
        id: `${String(t['id'])}-${i}`,
      }));
    }
    return e;
  });
}

function fires(rule: CompiledRule, event: Record<string, unknown>): boolean {
  const engine = new PartitionEngine([rule], { allowedLatenessMs: 60_000 });
  const t0 = Date.parse('2024-05-01T10:00:00Z');
  return copies(rule, event).some(
    (e, i) => engine.process(e, { org: 'org', timeMs: t0 + i * 1000, id: `case-${i}` }).length > 0,
  );
}

describe('Panther labelled cases', () => {
  const cases = readFileSync(CASES, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Case);
  const rules = new Map(loadRuleFile(RULES).map((r) => [r.id, r]));

  it('replays every case; report per rule', () => {
    const report = new Map<string, { tp: number; tn: number; fp: number; fn: number; note?: string }>();
    for (const c of cases) {
      const row = report.get(c.rule_id) ?? { tp: 0, tn: 0, fp: 0, fn: 0 };
      report.set(c.rule_id, row);
      const rule = rules.get(c.rule_id);
      if (!rule) {
        row.note = EXCEPTIONS[c.rule_id] ?? 'NO RULE';
        if (c.expect) row.fn++;
        else row.tn++;
        continue;
      }
      const got = fires(rule, c.event);
      if (got && c.expect) row.tp++;
      else if (!got && !c.expect) row.tn++;
      else if (got) row.fp++;
      else row.fn++;
    }
    console.table(
      [...report].map(([rule, r]) => ({
        rule,
        expected_true_fired: r.tp,
        expected_false_silent: r.tn,
        false_pos: r.fp,
        false_neg: r.fn,
        note: r.note ?? '',
      })),
    );
    const wrong = [...report].filter(([id, r]) => (r.fp || r.fn) && !EXCEPTIONS[id]);
    expect(wrong).toEqual([]);
    expect(report.size).toBe(30);
    // Every rule in the metadata has a rule here or a written exception.
    for (const id of report.keys()) expect(rules.has(id) || id in EXCEPTIONS, id).toBe(true);
    const total = [...report.values()].reduce((s, r) => s + r.tp + r.tn, 0);
    expect(total).toBe(cases.length);
  });

  it('window rules do not fire on fewer events than their threshold', () => {
    const bf = rules.get('Standard.BruteForceByIP')!;
    const hit = cases.find((c) => c.rule_id === 'Standard.BruteForceByIP' && c.expect)!;
    const engine = new PartitionEngine([bf], { allowedLatenessMs: 60_000 });
    const alerts = copies(bf, hit.event)
      .slice(1)
      .flatMap((e, i) => engine.process(e, { org: 'o', timeMs: i * 1000, id: `x${i}` }));
    expect(alerts).toEqual([]);
  });
});
