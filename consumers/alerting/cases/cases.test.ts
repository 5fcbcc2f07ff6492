/**
 * Test cases beside rules: inline in hooklog rules, in sidecars beside Sigma
 * and catalogue files (which load as published), how a case's events get
 * their times and ids, what a failure says, and the CI reports.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { describeRuleFiles } from '../commands.js';
import { lintPaths } from '../lint.js';
import { loadCases } from './load.js';
import { failed, renderJson, renderJunit, renderTable } from './report.js';
import { judge, runCases, runStreamCase } from './run.js';
import type { CaseSpec } from './schema.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-cases-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const opts = { allowedLatenessMs: 300_000 };

function folder(name: string, files: Record<string, string>): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(join(d, f), text);
  return d;
}

const SIGMA = `title: Account locked
id: 5e3a1b2c-0000-4000-8000-000000000001
logsource: { product: okta, service: okta }
detection:
  sel: { eventType: user.account.lock }
  condition: sel
level: high
`;
const CATALOGUE = `title: New Okta API Token Created
id: f0d9c641e55c89527c263090ed2ea0c8
detection:
  okta_systemlog:
    OIE: |
      eventType eq "system.api_token.create"
`;
const lock = { eventType: 'user.account.lock', actor: { alternateId: 'bob@example.com' } };

describe('where cases live', () => {
  const d = folder('formats', {
    'locked.yml': SIGMA,
    'locked.cases.yaml': stringify([
      { at: '0s', name: 'a lock', alert: true, severity: 'high', event: lock },
      { at: '0s', name: 'an unlock', alert: false, event: { eventType: 'user.account.unlock' } },
    ]),
    'new_api_token_created.yml': CATALOGUE,
    'new_api_token_created.cases.yml': stringify([
      {
        at: '0s',
        name: 'a token',
        rule: 'f0d9c641e55c89527c263090ed2ea0c8',
        alert: true,
        event: { eventType: 'system.api_token.create' },
      },
    ]),
    'own.yaml': stringify([
      {
        id: 'own.lock',
        detection: 'eventType eq "user.account.lock"',
        group_by: ['actor.alternateId'],
        cases: [{ at: '0s', name: 'keyed by user', alert: true, key: ['bob@example.com'], event: lock }],
      },
      { id: 'own.uncovered', detection: 'eventType eq "x"' },
    ]),
  });

  it('runs inline cases and sidecars beside Sigma and catalogue files, which load unchanged', async () => {
    const before = readFileSync(join(d, 'locked.yml'), 'utf8');
    const report = await runCases(loadCases([d]), opts);
    expect(report.results.map((r) => [r.rule, r.name, r.status])).toEqual([
      ['5e3a1b2c-0000-4000-8000-000000000001', 'a lock', 'passed'],
      ['5e3a1b2c-0000-4000-8000-000000000001', 'an unlock', 'passed'],
      ['f0d9c641e55c89527c263090ed2ea0c8', 'a token', 'passed'],
      ['own.lock', 'keyed by user', 'passed'],
    ]);
    expect(report.results[0]!.line).toBe(1);
    expect(report.results[3]!.line).toBe(6);
    expect(readFileSync(join(d, 'locked.yml'), 'utf8')).toBe(before);
    expect(renderTable(report, { cwd: d })).toContain('note own.uncovered (own.yaml): no cases');
    expect(failed(report)).toBe(false);
    expect(failed(report, { requireCases: true })).toBe(true);
  });

  it('a sidecar is not a rule file: rule listings leave it out; naming it tests the rule beside it', async () => {
    expect(describeRuleFiles([d]).rows.map((r) => String(r['file']).split('/').pop())).toEqual([
      'locked.yml',
      'new_api_token_created.yml',
      'own.yaml',
    ]);
    const only = await runCases(loadCases([join(d, 'locked.cases.yaml')]), opts);
    expect(only.results.map((r) => r.name)).toEqual(['a lock', 'an unlock']);
  });
});

describe('cases that cannot run say where and why, and do not stop the others', () => {
  it('reports invalid cases, unknown rules, an ambiguous sidecar and an orphan sidecar', async () => {
    const d = folder('problems', {
      'two.yaml': stringify([
        { id: 'a', detection: 'eventType eq "a"', cases: [{ name: 'no verdict', event: { eventType: 'a' } }] },
        { id: 'b', detection: 'eventType eq "b"', cases: [{ name: 'other rule', rule: 'a', alert: true, event: {} }] },
      ]),
      'two.cases.yaml': stringify([
        { at: '0s', name: 'which rule?', alert: true, event: { eventType: 'a' } },
        { at: '0s', name: 'no such rule', rule: 'zzz', alert: true, event: { eventType: 'a' } },
        { at: '0s', name: 'fine', rule: 'b', alert: true, event: { eventType: 'b' } },
      ]),
      'nobody.cases.yaml': stringify([{ at: '0s', name: 'x', alert: true, event: {} }]),
    });
    const report = await runCases(loadCases([d]), opts);
    const rows = report.results.map((r) => [r.file.split('/').pop(), r.line, r.status, r.message]);
    expect(rows).toEqual([
      ['nobody.cases.yaml', 1, 'error', expect.stringContaining('without a rule file beside it')],
      ['two.cases.yaml', 1, 'error', expect.stringContaining('the file yields 2 rules (a, b)')],
      ['two.cases.yaml', 6, 'error', expect.stringContaining('no rule zzz')],
      ['two.cases.yaml', 12, 'passed', ''],
      ['two.yaml', 4, 'error', 'invalid case: alert: Invalid input: expected boolean, received undefined'],
      ['two.yaml', 10, 'error', 'a case inside rule b names rule a'],
    ]);
    expect(failed(report)).toBe(true);
    expect(renderTable(report, { cwd: d })).toContain('ERROR a › no verdict (two.yaml:4): invalid case: alert:');
    // `rules lint` reports the same, as errors with file and line.
    expect(lintPaths([d]).map((p) => `${p.file.split('/').pop()}:${p.line} ${p.severity}`)).toEqual([
      'nobody.cases.yaml:1 error',
      'two.cases.yaml:1 error',
      'two.cases.yaml:6 error',
      'two.yaml:4 error',
      'two.yaml:10 error',
    ]);
  });
});

describe('events, times and the end of a case', () => {
  const d = folder('time', {
    'r.yaml': stringify([
      { id: 'silent', type: 'absence', window_ms: 3_600_000 },
      { id: 'hour', type: 'threshold', threshold: 2, window_ms: 3_600_000, detection: 'eventType eq "x"' },
      {
        id: 'pair',
        type: 'threshold',
        threshold: 2,
        window_ms: 60_000,
        detection: 'eventType eq "x"',
      },
    ]),
  });
  const loadOne = (rule: string, spec: Record<string, unknown>) => {
    writeFileSync(join(d, 'r.cases.yaml'), stringify([{ rule, name: 'c', at: '0s', ...spec }]));
    const l = loadCases([d]);
    expect(l.problems).toEqual([]);
    return l.cases[0]!;
  };

  it('times come from `at`, else `published` as written, else 1 s after the previous event; ids are stable', () => {
    const c = loadOne('pair', {
      alert: true,
      start: '2026-03-01T00:00:00Z',
      events: [
        { event: { eventType: 'x', published: '2026-03-01 10:00:00.000' } },
        { event: { eventType: 'x' } },
        { at: '2m', event: { eventType: 'x', uuid: 'given' }, repeat: 2, every: '30s' },
        { at: '2026-03-02T00:00:00Z', event: { eventType: 'x' } },
      ],
    });
    expect(c.feed.map((f) => f.event['published'])).toEqual([
      '2026-03-01 10:00:00.000',
      '2026-03-01T10:00:01.000Z',
      '2026-03-01T00:02:00.000Z',
      '2026-03-01T00:02:30.000Z',
      '2026-03-02T00:00:00.000Z',
    ]);
    const ids = c.feed.map((f) => String(f.event['uuid']));
    expect(ids[2]).toBe('given');
    expect(new Set(ids).size).toBe(5);
    expect(ids[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(loadOne('pair', { alert: true, events: [{ event: { eventType: 'x' } }] }).feed[0]!.event['uuid']).toBe(
      loadOne('pair', { alert: true, events: [{ event: { eventType: 'x' } }] }).feed[0]!.event['uuid'],
    );
  });

  it('an absence is decided only when `until` moves event time past the window', () => {
    const one = { eventType: 'y' };
    expect(runStreamCase(loadOne('silent', { alert: false, event: one }), opts).alerts).toEqual([]);
    const later = runStreamCase(loadOne('silent', { alert: true, event: one, until: '2h' }), opts).alerts;
    expect(later.map((a) => [a.rule_id, a.event_time])).toEqual([['silent', '2026-01-01T01:00:00.000Z']]);
  });

  it('an event later than the allowed lateness does not count in a window, and the failure says so', () => {
    // Ten minutes apart, within the hour's window, but the earlier one arrives second: 10 min late.
    const events = [
      { at: '1h', event: { eventType: 'x' } },
      { at: '50m', event: { eventType: 'x' } },
    ];
    const strict = loadOne('hour', { alert: true, events });
    const got = runStreamCase(strict, opts);
    expect(got.alerts).toEqual([]);
    expect(judge(strict.spec, got.alerts, got.late)).toBe(
      'expected an alert, got none; 1 event was late (behind the newest event by more than the allowed lateness), which only match rules take',
    );
    const ok = runStreamCase(loadOne('hour', { alert: true, events, lateness_ms: 900_000 }), opts);
    expect(ok.alerts.map((a) => a.count)).toEqual([2]);
  });
});

describe('grouped alerts, and titles and severities from the event', () => {
  const failure = (login: string, type = 'User') => ({
    eventType: 'user.session.start',
    outcome: { result: 'FAILURE' },
    actor: { alternateId: login, type },
  });
  const grouped = {
    id: 'grp.fail',
    detection: 'eventType eq "user.session.start" and outcome.result eq "FAILURE"',
    group_by: ['actor.alternateId'],
    dedup_period: '1h',
    title: 'Sign-in failures for {{ actor.alternateId }}',
    severity: "if(actor.type == 'SuperAdmin', 'critical', 'medium')",
  };
  const flood = {
    at: '0s',
    name: 'a flood within the hour is one alert of 5,000',
    alert: true,
    alerts: 1,
    count: 5000,
    title: 'Sign-in failures for alice@example.com',
    severity: 'medium',
    events: [{ event: failure('alice@example.com'), repeat: 5000, every: '500ms' }],
  };
  const admin = {
    at: '0s',
    name: "a super admin's failure is critical, with its own title",
    alert: true,
    severity: 'critical',
    title: 'Sign-in failures for root@example.com',
    event: failure('root@example.com', 'SuperAdmin'),
  };
  const periods = {
    at: '0s',
    name: 'a failure past the period opens a second alert',
    alert: true,
    alerts: 2,
    count: 1,
    events: [{ event: failure('bob@example.com'), repeat: 2, every: '61m' }],
  };

  it('a case asserts the grouped count and the title and severity the event made', async () => {
    const d = folder('grouped', { 'rules.yaml': stringify([{ ...grouped, cases: [flood, admin, periods] }]) });
    expect(lintPaths([d])).toEqual([]);
    const report = await runCases(loadCases([d]), opts);
    expect(report.results.map((r) => [r.name, r.status, r.message])).toEqual([
      [flood.name, 'passed', ''],
      [admin.name, 'passed', ''],
      [periods.name, 'passed', ''],
    ]);
    expect(report.results[0]!.alerts).toHaveLength(1);
    expect(report.results[0]!.alerts[0]).toMatchObject({ count: 5000, findings: 5000 });
  });

  it('lint: mistakes in the new keys at their rule, a path that reads nothing as a warning', () => {
    const d = folder('grouped-lint', {
      'rules.yaml': stringify([
        { ...grouped, id: 'ok' },
        { ...grouped, id: 'typo', title: 'Failures for {{ actr.alternateId }}' },
        { ...grouped, id: 'long', dedup_period: '9d' },
        { ...grouped, id: 'both', suppress_ms: 60_000 },
        { ...grouped, id: 'broken', dedup: 'lower(actor.alternateId' },
      ]),
    });
    expect(lintPaths([d]).map((p) => [p.line, p.severity, p.message])).toEqual([
      [
        12,
        'warning',
        '"actr.alternateId" (in title, severity or dedup) is not a LogEvent field nor one of the rule\'s fields: it is always null on a real event; did you mean actor.alternateId?',
      ],
      [14, 'error', 'rule long: dedup_period: expected a duration from 1s to 7d: 30s, 15m, 1h, 1d, or milliseconds'],
      [
        20,
        'error',
        'rule both: suppress_ms and dedup/dedup_period do not go together: a grouped alert counts the findings suppression drops',
      ],
      [27, 'error', 'rule broken.dedup: missing ) after arguments (at 23 in "lower(actor.alternateId")'],
    ]);
  });

  it('and fails when they differ, saying how', async () => {
    const wrong = [
      { ...flood, count: 4999 },
      { ...admin, severity: 'high' },
      { ...admin, title: 'Sign-in failures for someone else' },
      { ...periods, alerts: 1 },
    ];
    const d = folder('grouped-wrong', { 'rules.yaml': stringify([{ ...grouped, cases: wrong }]) });
    const report = await runCases(loadCases([d]), opts);
    expect(report.results.map((r) => r.message)).toEqual([
      'expected count 4999, got 5000 (key ["alice@example.com"], count 5000, 5000 findings, at 2026-01-01T00:00:00.000Z)',
      'expected severity high, got critical',
      'expected title "Sign-in failures for someone else", got "Sign-in failures for root@example.com" (key ["root@example.com"], count 1, 1 finding, at 2026-01-01T00:00:00.000Z)',
      'expected 1 alerts, got 2: key ["bob@example.com"], count 1, 1 finding, at 2026-01-01T00:00:00.000Z, …',
    ]);
  });
});

describe('what a failure says', () => {
  const alert = {
    alert_id: 'a1',
    rule_id: 'r',
    rule_title: 'r',
    severity: 'medium',
    kind: 'threshold',
    org: 'acme',
    key: '["203.0.113.9"]',
    event_time: '2026-01-01T00:01:00.000Z',
    first_event_time: '2026-01-01T00:00:00.000Z',
    count: 3,
    event_ids: [],
  } as const;
  const spec = (over: Partial<CaseSpec>): CaseSpec =>
    ({ name: 'c', alert: true, org: 'acme', start: '2026-01-01T00:00:00Z', event: {}, ...over }) as CaseSpec;

  it('names what differs', () => {
    expect(judge(spec({}), [alert])).toBeNull();
    expect(judge(spec({ alert: false }), [alert, alert])).toBe(
      'expected no alert, got 2: key ["203.0.113.9"], count 3, at 2026-01-01T00:01:00.000Z, …',
    );
    expect(judge(spec({ alerts: 2 }), [alert])).toMatch(/^expected 2 alerts, got 1: key/);
    expect(judge(spec({ key: ['198.51.100.1'] }), [alert])).toMatch(
      /^expected key \["198.51.100.1"\], got \["203.0.113.9"\]/,
    );
    expect(judge(spec({ key: ['203.0.113.9'], count: 3, severity: 'medium' }), [alert])).toBeNull();
    expect(judge(spec({ severity: 'high' }), [alert])).toBe('expected severity high, got medium');
    expect(judge(spec({ count: 5 }), [alert])).toMatch(/^expected count 5, got 3/);
    expect(judge(spec({}), [])).toBe('expected an alert, got none');
  });
});

describe('reports for CI', () => {
  it('JUnit XML: a suite per file, a test case per case with its failure, escaped; JSON with the same', async () => {
    const d = folder('junit', {
      'r.yaml': stringify([
        {
          id: 'r.1',
          detection: 'eventType eq "x"',
          cases: [
            { at: '0s', name: 'fires "quoted" & <tagged>', alert: false, event: { eventType: 'x' } },
            { at: '0s', name: 'silent', alert: false, event: { eventType: 'y' } },
          ],
        },
      ]),
    });
    const report = await runCases(loadCases([d]), opts);
    const xml = renderJunit(report, { cwd: d });
    expect(xml).toContain('<testsuites name="hooklog rules test --cases" tests="3" failures="1" errors="0"');
    expect(xml).toContain('<testsuite name="r.yaml" tests="3" failures="1" errors="0" skipped="1"');
    expect(xml).toContain(
      'classname="r.1" name="fires &#34;quoted&#34; &#38; &#60;tagged&#62;" file="r.yaml" line="4"',
    );
    expect(xml).toMatch(
      /<failure message="expected no alert, got 1: key \[\], count 1, at [^"]+">r\.yaml:4: expected no alert/,
    );
    // The rule has no case that alerts: listed, as skipped (a failure with --require-cases).
    expect(xml).toContain('name="(cases)" file="r.yaml" time="0"><skipped message="no case that alerts"/>');
    expect(renderJunit(report, { cwd: d, requireCases: true })).toContain('<failure message="no case that alerts">');
    const json = JSON.parse(renderJson(report, { cwd: d })) as {
      summary: Record<string, number>;
      cases: Array<{ where: string; status: string; message?: string }>;
    };
    expect(json.summary).toMatchObject({ rules: 1, cases: 2, passed: 1, failed: 1, errors: 0 });
    expect(json.cases.map((c) => [c.where, c.status])).toEqual([
      ['r.yaml:4', 'failed'],
      ['r.yaml:9', 'passed'],
    ]);
  });
});
