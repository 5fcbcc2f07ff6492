/**
 * `hooklog rules test --cases` as a user runs it in CI: a separate process, no
 * config, no broker, no store running. The shipped content passes; a planted
 * wrong expectation fails with one line naming rule, case, place and what
 * happened, exit 1; JUnit XML and JSON reports are written beside the table.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
      '    - name: four failures and a success\n      alert: false',
      '    - name: four failures and a success\n      alert: true',
    );
    expect(planted).not.toBe(text);
    writeFileSync(file, planted);
    const line = planted.split('\n').indexOf('    - name: four failures and a success') + 1;
    const r = await cli(['rules', 'test', '--cases', file]);
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n')[0]).toBe(
      `FAIL Okta.BruteForceLogins › four failures and a success (${file}:${line}): expected an alert, got none`,
    );
    expect(r.stdout).toMatch(/30 rules, \d+ cases: \d+ passed, 1 failed/);
  });

  it('tests a Sigma file through its sidecar, and says which form takes which options', async () => {
    const sigma = join(dir, 'locked.yml');
    writeFileSync(
      sigma,
      'title: Locked\nid: locked-1\nlogsource: { product: okta }\ndetection:\n  sel: { eventType: user.account.lock }\n  condition: sel\n',
    );
    writeFileSync(
      join(dir, 'locked.cases.yaml'),
      '- { name: a lock, alert: true, event: { eventType: user.account.lock } }\n- { name: an unlock, alert: true, event: { eventType: user.account.unlock } }\n',
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
});
