/**
 * The prefilter may only skip a rule that could not have matched: for every
 * rule and event, where(event) ⇒ the rule is among the candidates, which keep
 * the rules' order. Checked over detections that give a condition and ones
 * that must not (negations, wildcards, null, modifiers), and over events that
 * spell or shape the field unusually.
 */
import { describe, expect, it } from 'vitest';
import { needsOf, RuleIndex } from './prefilter.js';
import { compileRule } from './rules/compile.js';
import type { CompiledRule } from './rules/types.js';

const detections: Record<string, unknown>[] = [
  { sel: { eventType: 'user.session.start' }, condition: 'sel' },
  { sel: { eventType: ['User.Session.Start', 'user.account.lock'] }, condition: 'sel' },
  { sel: { 'eventType|cased': 'user.account.lock' }, condition: 'sel' },
  { sel: { eventtype: 'zone.delete', 'outcome.result': 'FAILURE' }, condition: 'sel' },
  { a: { eventType: 'zone.delete' }, b: { eventType: 'user.account.lock' }, condition: 'a or b' },
  { a: { eventType: 'zone.delete' }, b: { 'outcome.result': 'FAILURE' }, condition: 'a or b' },
  { a: { eventType: 'zone.delete' }, condition: 'not a' },
  { sel: { 'eventType|startswith': 'user.' }, condition: 'sel' },
  { sel: { eventType: 'user.*' }, condition: 'sel' },
  { sel: { eventType: [null, 'x'] }, condition: 'sel' },
  { sel: [{ eventType: 'zone.delete' }, { eventType: '42' }], condition: 'sel' },
  { sel_a: { eventType: 'zone.delete' }, sel_b: { eventType: 'user.account.lock' }, condition: '1 of sel_*' },
  { sel: ['zone'], condition: 'sel' },
];
const filters = [
  'eventType eq "user.session.start"',
  'eventType eq "zone.delete" or eventType eq "user.account.lock"',
  'eventType ne "zone.delete"',
  'eventType sw "user."',
  'outcome.result eq "FAILURE" and eventType eq "user.account.lock"',
];

const rules: CompiledRule[] = [
  ...detections.map((detection, i) => compileRule({ id: `d${i}`, detection })),
  ...filters.map((detection, i) => compileRule({ id: `f${i}`, detection })),
  compileRule({ id: 'seq', type: 'sequence', window_ms: 1000, first: detections[0], then: detections[2] }),
];

const events: unknown[] = [
  { eventType: 'user.session.start', outcome: { result: 'FAILURE' } },
  { eventType: 'USER.SESSION.START' },
  { eventType: 'user.account.lock', outcome: { result: 'FAILURE' } },
  { eventType: 'User.Account.Lock' },
  { eventType: 'zone.delete', outcome: { result: 'FAILURE' } },
  { eventType: 'zone.delete' },
  { eventType: 'policy.rule.update' },
  { eventType: 42 },
  { eventType: ['zone.delete', 'user.account.lock'] },
  { event_type: 'zone.delete', outcome: { result: 'FAILURE' } },
  { eventtype: 'user.account.lock' },
  { eventType: null },
  { outcome: { result: 'FAILURE' } },
  {},
];

function ruleNeeds(r: CompiledRule) {
  return r.kind === 'sequence' ? new Map() : needsOf(r.where);
}

describe('prefilter', () => {
  const index = new RuleIndex(rules, ruleNeeds);

  it('never leaves out a rule that matches, and keeps the rules in order', () => {
    for (const e of events) {
      const cands = index.candidates(e);
      const positions = cands.map((r) => rules.indexOf(r));
      expect(positions).toEqual([...new Set(positions)].sort((a, b) => a - b));
      for (const r of rules) if (r.where(e)) expect(cands, `${r.id} on ${JSON.stringify(e)}`).toContain(r);
    }
  });

  it('gives no condition where one would be unsound', () => {
    for (const id of ['d5', 'd6', 'd7', 'd8', 'd9', 'd12', 'f2', 'f3'])
      expect(needsOf(rules.find((r) => r.id === id)!.where).size, id).toBe(0);
  });

  it('evaluates only the rules an event can match', () => {
    // Indexed on eventType as most rules spell it; d3 spells it `eventtype` (resolved differently), so it always runs.
    const always = ['d3', 'd5', 'd6', 'd7', 'd8', 'd9', 'd12', 'f2', 'f3', 'seq'];
    const ids = (e: unknown) => index.candidates(e).map((r) => r.id);
    const inOrder = (xs: string[]) => rules.map((r) => r.id).filter((id) => xs.includes(id));
    expect(index.unindexed).toBe(always.length);
    expect(ids({ eventType: 'policy.rule.update' })).toEqual(inOrder(always));
    expect(ids({ eventType: 'Zone.Delete' })).toEqual(inOrder([...always, 'd4', 'd10', 'd11', 'f1']));
    expect(ids({ eventType: ['zone.delete', 'user.account.lock'] })).toEqual(
      inOrder([...always, 'd1', 'd2', 'd4', 'd10', 'd11', 'f1', 'f4']),
    );
  });
});
