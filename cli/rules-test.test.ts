/**
 * `hooklog rules test --cases` as a user runs it in CI: a separate process, no
 * config, no broker, no store running. The shipped content passes; a planted
 * wrong expectation fails with one line naming rule, case, place and what
 * happened, exit 1; JUnit XML and JSON reports are written beside the table.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCases } from '../consumers/alerting/cases/load.js';
import { CONTENT_DIR } from '../consumers/alerting/index.js';
import { configSchema, type Config } from './config/schema.js';
import { defaultCasePaths } from './rules-test.js';
import { runCli } from '../test/support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-rules-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// A config with no alerting section, as in a repository of rules: nothing configured, nothing running.
const config = join(dir, 'hooklog.yaml');
writeFileSync(config, 'log_level: warn\n');
const cli = (args: string[]) => runCli(['--config', config, ...args]);

describe('which rules --cases tests without paths', () => {
  it('the configured ones with the built-in rules, each once; with none configured, the shipped content', () => {
    const ids = (c: Config) => loadCases(defaultCasePaths(c)).rules.map((r) => r.rule.id);
    const content = ids(configSchema.parse({}));
    // Every shipped rule, once: as many as the content files hold, none counted twice.
    expect(content.length).toBeGreaterThan(40);
    expect(new Set(content).size).toBe(content.length);
    // The content directory configured (as docs/detect/rules.md advises) holds the built-in file too: still once each.
    expect(ids(configSchema.parse({ alerting: { rule_paths: [CONTENT_DIR] } })).sort()).toEqual([...content].sort());
    const own = join(dir, 'own.yaml');
    writeFileSync(own, '- { id: own.rule, detection: \'eventType eq "x"\' }\n');
    const builtIn = loadCases([join(CONTENT_DIR, 'hook-deliveries.yaml')]).rules.map((r) => r.rule.id);
    expect(builtIn).toContain('hooklog.hook.delivery.lost');
    expect(ids(configSchema.parse({ alerting: { rule_files: [own] } }))).toEqual([...builtIn, 'own.rule']);
  });
});

describe('hooklog rules test --cases', () => {
  it('passes over the shipped content by default, with JUnit and JSON reports beside the table', async () => {
    const junit = join(dir, 'cases.xml');
    const json = join(dir, 'cases.json');
    const r = await cli(['rules', 'test', '--cases', '--require-cases', '--junit', junit, '--json', json]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const shipped = loadCases(defaultCasePaths(configSchema.parse({}))).rules.length;
    expect(r.stdout).toMatch(
      new RegExp(
        `^${shipped} rules, \\d+ cases: \\d+ passed, 0 failed; 0 rules without cases \\(\\d+\\.\\d\\d s\\)\\n$`,
      ),
    );
    const report = JSON.parse(readFileSync(json, 'utf8')) as { summary: { cases: number; passed: number } };
    expect(report.summary.passed).toBe(report.summary.cases);
    expect(report.summary.cases).toBeGreaterThan(88);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toContain(`tests="${report.summary.cases}" failures="0" errors="0"`);
    expect(xml).toContain('classname="Okta.GeographicallyImprobableAccess" name="Paris, then New York an hour later"');
  });

  it('a planted wrong expectation fails with a clear line and exit 1', async () => {
    const file = join(dir, 'panther-okta.yaml');
    const text = readFileSync(join(CONTENT_DIR, 'panther-okta.yaml'), 'utf8');
    const planted = text.replace(
      '    - name: four failures and a success\n      at: 0s\n      alert: false',
      '    - name: four failures and a success\n      at: 0s\n      alert: true',
    );
    expect(planted).not.toBe(text);
    writeFileSync(file, planted);
    const line = planted.split('\n').indexOf('    - name: four failures and a success') + 1;
    const r = await cli(['rules', 'test', '--cases', file]);
    expect(r.code).toBe(1);
    // The failure explains itself: the event that decided, each condition with the value it saw.
    expect(r.stdout.split('\n')[0]).toBe(
      `FAIL Okta.BruteForceLogins › four failures and a success (${file}:${line}): expected an alert, got none: event 5 of 5: ` +
        'sel: all_of[ eventType: "user.session.start" → "user.session.start" ✓, outcome.result: "FAILURE" → "SUCCESS" ✗ ]',
    );
    expect(r.stdout).toMatch(/30 rules, \d+ cases: \d+ passed, 1 failed/);
  });

  it('a file named without .yaml is still tested; a directory with no rule is an error, not "0 rules: passed"', async () => {
    const text = readFileSync(join(CONTENT_DIR, 'panther-okta.yaml'), 'utf8');
    // As a browser saves a download it was not told the name of.
    const bare = join(dir, 'download-1f3a');
    writeFileSync(bare, text);
    const r = await cli(['rules', 'test', '--cases', bare]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^30 rules, [1-9]\d* cases: [1-9]\d* passed, 0 failed/m);
    const empty = join(dir, 'no-rules-here');
    mkdirSync(empty);
    writeFileSync(join(empty, 'notes.txt'), 'not a rule\n');
    const none = await cli(['rules', 'test', '--cases', empty]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain(`${empty}: no rule file (.yaml or .yml) under this directory`);
  });

  it('tests a Sigma file through its sidecar, and says which form takes which options', async () => {
    const sigma = join(dir, 'locked.yml');
    writeFileSync(
      sigma,
      'title: Locked\nid: locked-1\nlogsource: { product: okta }\ndetection:\n  sel: { eventType: user.account.lock }\n  condition: sel\n',
    );
    writeFileSync(
      join(dir, 'locked.cases.yaml'),
      '- { name: a lock, at: 0s, alert: true, event: { eventType: user.account.lock } }\n- { name: an unlock, at: 0s, alert: true, event: { eventType: user.account.unlock } }\n',
    );
    const r = await cli(['rules', 'test', '--cases', sigma, '-f', 'junit']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`<testsuite name="${join(dir, 'locked.cases.yaml')}" tests="2" failures="1"`);
    const since = await cli(['rules', 'test', '--cases', '--since', '30d']);
    expect([since.code, since.stderr]).toEqual([
      1,
      'hooklog: QUERY_INVALID: --since, --until and --org are for the backtest, not --cases\n',
    ]);
    const missing = await cli(['rules', 'test', '--cases', join(dir, 'nothing-here')]);
    expect([missing.code, missing.stderr]).toEqual([
      1,
      `hooklog: CONFIG_INVALID: ${join(dir, 'nothing-here')}: no such rule file or directory\n`,
    ]);
    const backtest = await cli(['rules', 'test', sigma]);
    expect(backtest.code).toBe(1);
    expect(backtest.stderr).toContain('a backtest takes one <file|dir|rule-id> and --since');
  });
  it('--rule, --tag and --case choose; a broken file is one JUnit error while the rest run; a scheduled rule from mocks', async () => {
    const d = join(dir, 'choose');
    mkdirSync(d, { recursive: true });
    const rows = (day: string) =>
      `{ at: 0s, event: { eventType: user.session.start, published: '${day}T00:10:00Z', actor: { alternateId: bob@example.com } } }`;
    writeFileSync(
      join(d, 'rules.yaml'),
      [
        '- id: acme.lock',
        '  tags: [lockout]',
        '  detection: \'eventType eq "user.account.lock"\'',
        '  cases:',
        '    - { name: a lock, at: 0s, alert: true, event: { eventType: user.account.lock } }',
        '    - { name: an unlock, at: 0s, alert: false, event: { eventType: user.account.unlock } }',
        '- id: acme.signins',
        '  type: scheduled',
        '  every_ms: 3600000',
        '  lookback_ms: 3600000',
        '  key: [actor]',
        '  sql: |',
        '    SELECT org, actor_alternate_id AS actor, count() AS count FROM {db}.events_v4 FINAL',
        "    WHERE published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')} GROUP BY org, actor",
        '  cases:',
        `    - { name: bob signs in, alert: true, key: [bob@example.com], events: [${rows('2026-01-01')}] }`,
        `    - { name: bob was alerted on before, alert: false, mocks: { alerted: [{ key: [bob@example.com] }] }, events: [${rows('2026-01-01')}] }`,
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(d, 'broken.yaml'),
      "- { id: acme.broken, detection: 'eventType eq \"x\"', severity: 'frobnicate(actor.type)' }\n",
    );
    const junit = join(d, 'out.xml');
    const all = await cli(['rules', 'test', '--cases', d, '--junit', junit]);
    expect(all.code).toBe(1);
    expect(all.stdout).toMatch(/^ERROR \(file\) \(\S*broken\.yaml:1\): the rule file does not load: .*frobnicate/m);
    expect(all.stdout).toContain('2 rules, 5 cases: 4 passed, 0 failed, 1 could not run');
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toContain('broken.yaml" tests="1" failures="0" errors="1"');
    expect(xml).toContain('classname="acme.signins" name="bob was alerted on before"');
    const some = await cli([
      'rules',
      'test',
      '--cases',
      join(d, 'rules.yaml'),
      '--tag',
      'LOCK*',
      '--case',
      'an unlock',
    ]);
    expect([some.code, some.stdout.split('\n').at(-2)]).toEqual([
      0,
      expect.stringMatching(/^1 rules, 1 cases: 1 passed, 0 failed;/),
    ]);
    const none = await cli([
      'rules',
      'test',
      '--cases',
      join(d, 'rules.yaml'),
      '--rule',
      'acme.sign*',
      '--case',
      'bob*',
    ]);
    expect([none.code, none.stdout.split('\n').at(-2)]).toEqual([
      0,
      expect.stringMatching(/^1 rules, 2 cases: 2 passed/),
    ]);
    const backtest = await cli(['rules', 'test', d, '--since', '1d', '--rule', 'x']);
    expect(backtest.stderr).toContain('--rule, --tag, --case and -f junit go with --cases');
  });
});

describe('hooklog rules test --cases with the config’s IP lists', () => {
  it('a rule testing `in list()` runs with the lists of enrichment.ip_lists, and a case may bring its own', async () => {
    const d = join(dir, 'ip-lists');
    mkdirSync(d, { recursive: true });
    const listFile = join(d, 'anonymizers.txt');
    writeFileSync(listFile, '# exit nodes\n198.51.100.0/24\n2001:db8:a::/48\n');
    const withLists = join(d, 'hooklog.yaml');
    writeFileSync(
      withLists,
      `log_level: warn\nenrichment:\n  ip_lists:\n    - { name: anonymizers, path: ${JSON.stringify(listFile)} }\n`,
    );
    const rules = join(d, 'anon.yaml');
    writeFileSync(
      rules,
      [
        '- id: anon.signin',
        '  detection: eventType eq "user.session.start" and client.ipAddress in list("anonymizers")',
        '  cases:',
        '    - { name: an exit node, at: 0s, alert: true, event: { eventType: user.session.start, client: { ipAddress: "198.51.100.9" } } }',
        '    - { name: mapped IPv6, at: 0s, alert: true, event: { eventType: user.session.start, client: { ipAddress: "::ffff:198.51.100.9" } } }',
        '    - { name: an office, at: 0s, alert: false, event: { eventType: user.session.start, client: { ipAddress: "192.0.2.1" } } }',
        '    - name: the case’s own list',
        '      at: 0s',
        '      alert: true',
        '      lists: { anonymizers: [192.0.2.0/24] }',
        '      event: { eventType: user.session.start, client: { ipAddress: "192.0.2.1" } }',
        '',
      ].join('\n'),
    );
    const r = await runCli(['--config', withLists, 'rules', 'test', '--cases', rules]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/1 rules?, 4 cases: 4 passed/);
    // Without the config's list, the cases that need it cannot run, and say which list is missing.
    const bare = await cli(['rules', 'test', '--cases', rules]);
    expect(bare.code).toBe(1);
    expect(bare.stdout).toContain('unknown IP list "anonymizers"');
    // And lint says so too, against the config it is given.
    expect((await runCli(['--config', withLists, 'rules', 'lint', rules])).code).toBe(0);
    const lint = await cli(['rules', 'lint', rules]);
    expect(lint.code).toBe(1);
    expect(lint.stdout).toContain('unknown IP list "anonymizers"');
  });
});
