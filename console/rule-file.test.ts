/**
 * The rule file "Make a rule" downloads (rule-file.ts), written from events whose every value is hostile: it
 * reads back to the very events (no quote, newline, anchor, tag, merge key, template or bidi control changes
 * them), it is a file `hooklog rules test --cases` passes (the CLI, run as a user runs it), and a mark the
 * rule contradicts fails that same run — which is why the route runs the cases before it answers.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../test/support/cli.js';
import { caseName, parseRuleRequest, ruleFileText, ruleOf, type StoredEvent } from './rule-file.js';
import { refusalOf } from './make-rule.js';
import { ParamError } from './range.js';

const HOSTILE = [
  `it's "quoted"\nsecond line\r\n\ttabbed`,
  '!!js/function "function () { return process }"',
  '&anchor *alias !tag %YAML 1.1 --- ...',
  '{{ actor.alternateId }} {% raw %}',
  '\u202eevil.exe\u200b\u2066rtl\u2069',
  'yes',
  'null',
  '0x1F',
  '2026-01-01',
  '- [a, b]: {c: d} # comment',
  '\u0000\u0007\u001b[31m\u0085\u2028\ufeff',
  '\ud800 lone surrogate',
];

/** A failed sign-in of `user` whose every other value is hostile, with its keys hostile too. */
function hostileEvent(uuid: string, user: string, result: string): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify({
      uuid,
      published: '2026-03-01T10:00:00.000Z',
      eventType: 'user.session.start',
      actor: { alternateId: user, displayName: HOSTILE[0], type: 'User' },
      outcome: { result, reason: HOSTILE[1] },
      client: { ipAddress: '198.51.100.7', userAgent: { rawUserAgent: HOSTILE[3] } },
      displayMessage: HOSTILE.join(' | '),
      debugContext: {
        debugData: Object.fromEntries(HOSTILE.map((v, i) => [v, i % 2 ? v : [v, { [v]: v }]])),
      },
      target: [{ '<<': { alternateId: 'merged?' }, alternateId: HOSTILE[2] }],
    }).replace('"debugContext"', '"__proto__":{"polluted":"yes"},"debugContext"'),
  ) as Record<string, unknown>;
}

const FILTER = 'eventType eq "user.session.start" and outcome.result eq "FAILURE" and actor.alternateId co "\\"{{"';

function fileOf(q: Record<string, string>, events: Array<Record<string, unknown>>): { text: string; file: string } {
  const r = parseRuleRequest(q);
  const stored = new Map<string, StoredEvent>(
    events.map((e) => [String(e.uuid), { uuid: String(e.uuid), raw: JSON.stringify(e), publishedMs: 0 }]),
  );
  const text = ruleFileText(ruleOf(r, stored));
  const file = join(mkdtempSync(join(tmpdir(), 'hooklog-rule-file-')), `${r.id}.yaml`);
  writeFileSync(file, text);
  return { text, file };
}

describe('the rule file made from a search', () => {
  const users = [`"{{ x }}'\n&a <<: !!str\u202e@a.example`, `- ? ${HOSTILE[1]}`, 'calm@a.example'];
  const events = [
    hostileEvent('11111111-1111-4111-8111-111111111111', users[0]!, 'FAILURE'),
    hostileEvent('22222222-2222-4222-8222-222222222222', users[1]!, 'FAILURE'),
    hostileEvent('33333333-3333-4333-8333-333333333333', users[2]!, 'SUCCESS'),
  ];
  const q = {
    org: `acme "' \n`,
    name: 'acme.from-search:1',
    filter: FILTER.replace(' and actor.alternateId co "\\"{{"', ''),
    alert: `${events[0]!.uuid},${events[1]!.uuid}`,
    quiet: String(events[2]!.uuid),
  };

  for (const [kind, extra] of [
    ['match', {}],
    ['threshold', { group_by: 'actor.alternateId', threshold: '3', window: '5' }],
  ] as const) {
    it(`reads back to the same events and passes rules test --cases (${kind})`, async () => {
      const { text, file } = fileOf({ ...q, ...extra }, events);
      // The loaders' own reading (merge keys on, as cases/load.ts reads): the events come back whole.
      const rules = parseDocument(text, { merge: true }).toJS({ maxAliasCount: 10_000 }) as Array<{
        type: string;
        detection: string;
        group_by?: string[];
        cases: Array<{
          name: string;
          org: string;
          event?: unknown;
          events?: Array<{ event: unknown; repeat: number }>;
        }>;
      }>;
      expect(rules).toHaveLength(1);
      const rule = rules[0]!;
      expect(rule.type).toBe(kind);
      expect(rule.detection).toBe(q.filter);
      expect(rule.cases.map((c) => c.org)).toEqual([q.org, q.org, q.org]);
      const sent = rule.cases.map((c) => c.event ?? c.events![0]!.event);
      expect(JSON.stringify(sent)).toBe(JSON.stringify(events));
      if (kind === 'threshold') {
        expect(rule.group_by).toEqual(['actor.alternateId']);
        expect(rule.cases.map((c) => c.events![0]!.repeat)).toEqual([3, 3, 3]);
      }
      // No text of an event is ever a YAML tag or anchor: every string is quoted.
      expect(text).not.toMatch(/^\s*[^#"\s][^"\n]*[:-] +[!&*]/m);

      const run = await runCli(['rules', 'test', '--cases', file, '-f', 'json']);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const report = JSON.parse(run.stdout) as {
        summary: { passed: number; failed: number };
        cases: Array<{ name: string; status: string; alerts: unknown[] }>;
      };
      expect(report.summary).toMatchObject({ passed: 3, failed: 0 });
      expect(report.cases.map((c) => c.alerts.length)).toEqual([1, 1, 0]);
      expect(report.cases.map((r) => [r.name, r.status])).toEqual([
        [caseName(0, { uuid: String(events[0]!.uuid), mark: 'alert' }), 'passed'],
        [caseName(1, { uuid: String(events[1]!.uuid), mark: 'alert' }), 'passed'],
        [caseName(2, { uuid: String(events[2]!.uuid), mark: 'quiet' }), 'passed'],
      ]);
    });
  }

  it('fails rules test --cases when a mark contradicts the filter (what the route refuses to hand out)', async () => {
    // The quiet event is a success; marked should-alert, the filter does not take it.
    const { file } = fileOf({ ...q, alert: `${q.alert},${q.quiet}`, quiet: '' }, events);
    const run = await runCli(['rules', 'test', '--cases', file]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`FAIL acme.from-search:1 › should alert #3: event ${String(events[2]!.uuid)}`);
    expect(run.stdout).toContain('3 cases: 2 passed, 1 failed');
  });

  it('refuses what would not make a rule, naming the parameter', () => {
    const bad = (over: Record<string, string>) => {
      try {
        parseRuleRequest({ ...q, ...over });
      } catch (err) {
        return err instanceof ParamError ? [err.param, err.message] : ['?', String(err)];
      }
      return undefined;
    };
    expect(bad({ name: 'has space' })?.[0]).toBe('name');
    expect(bad({ name: '{{ x }}' })?.[0]).toBe('name');
    expect(bad({ filter: ' ' })).toEqual([
      'filter',
      'parameter "filter": a rule needs a filter: search with one first',
    ]);
    expect(bad({ filter: 'eventType eq' })?.[0]).toBe('filter');
    expect(bad({ group_by: 'outcome.reslt' })).toEqual([
      'group_by',
      'parameter "group_by": "outcome.reslt" is not a field of an event',
    ]);
    expect(bad({ threshold: '0' })?.[0]).toBe('threshold');
    expect(bad({ alert: '' })?.[0]).toBe('alert');
    expect(bad({ quiet: String(events[0]!.uuid) })?.[1]).toContain('marked both');
    expect(bad({ org: '*' })?.[0]).toBe('org');
    expect(bad({})).toBeUndefined();
  });

  it('names the event a failing case was made from, and blames the rule when its file does not load', () => {
    const r = parseRuleRequest(q);
    const passed = r.marks.map((m, i) => ({ name: caseName(i, m), failure: null }));
    expect(refusalOf(r, passed)).toBeUndefined();
    const quietFails = passed.map((x, i) => (i === 2 ? { ...x, failure: 'expected no alert, got 1' } : x));
    expect(refusalOf(r, quietFails)).toEqual({
      param: 'quiet',
      event: events[2]!.uuid,
      error: `event ${String(events[2]!.uuid)} is marked "should not alert", but the rule alerts on it: the filter matches it: expected no alert, got 1`,
    });
    expect(refusalOf(r, [{ name: '', failure: 'the rule file does not load: rule x: bad' }])).toEqual({
      param: 'filter',
      error: 'the rule does not hold: the rule file does not load: rule x: bad',
    });
  });
});
