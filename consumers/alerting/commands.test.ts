/**
 * `hooklog hunt` and `hooklog rules` as a user runs them: a separate process,
 * embedded ClickHouse under the config's data_dir, rule files in three formats.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { insertChunk } from '../../bench/analytics/load.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore } from '../../platform/store/index.js';
import { runCli } from '../../test/support/cli.js';
import { writeTestConfig, type TestInstance } from '../../test/support/hooklog-config.js';
import { parseInstant } from './commands.js';

const HUNT = `title: Sign-ins from proxies
id: 0123abcd
description: |
  Successful or not, sign-ins through an anonymising proxy.
detection:
  okta_systemlog:
    OIE: |
      eventType eq "user.session.start" and securityContext.isProxy eq "true"
false_positives:
  - VPN users
`;

const PROSE = `title: Something only described
id: 4567ef
detection:
  explanation: |
    Counts things.
  splunk: |
    index=main | stats count by x
`;

const SIGMA = `title: Sigma one
id: 9d9d9d9d-0000-4000-8000-000000000001
logsource: { product: okta, service: okta }
detection:
  sel: { eventType: user.account.lock }
  condition: sel
level: high
`;

function event(uuid: string, published: string, proxy: boolean, org = 'acme') {
  return {
    org,
    event: {
      uuid,
      published,
      eventType: 'user.session.start',
      actor: { alternateId: `${uuid}@example.com` },
      client: { ipAddress: '192.0.2.1' },
      outcome: { result: 'SUCCESS' },
      securityContext: { isProxy: proxy },
    },
  };
}

describe('hooklog hunt and hooklog rules', () => {
  let t: TestInstance;
  let dir: string;
  beforeAll(async () => {
    t = writeTestConfig();
    dir = join(t.dir, 'rules');
    mkdirSync(join(dir, 'hunts'), { recursive: true });
    writeFileSync(join(dir, 'hunts', 'hunt_proxies.yml'), HUNT);
    writeFileSync(join(dir, 'prose.yml'), PROSE);
    writeFileSync(join(dir, 'sigma.yml'), SIGMA);
    writeFileSync(
      join(dir, 'own.yaml'),
      stringify([{ id: 'own.rule', detection: 'eventType eq "user.account.lock"' }]),
    );
    const config = parse(readFileSync(t.configPath, 'utf8')) as { store: { database: string } };
    const store = openStore({ database: config.store.database, dataDir: join(t.dir, 'data'), logger: silentLogger() });
    await migrate(store, silentLogger());
    await insertChunk(store, [
      event('p1', '2026-03-02T10:00:00Z', true),
      event('p2', '2026-03-03T10:00:00Z', true),
      event('n1', '2026-03-02T11:00:00Z', false),
      event('old', '2026-02-01T10:00:00Z', true),
      event('other', '2026-03-02T10:00:00Z', true, 'globex'),
    ]);
    await store.close();
  });

  it("hunts with the file's filter, over one org and time range", async () => {
    const r = await runCli([
      '--config',
      t.configPath,
      'hunt',
      join(dir, 'hunts', 'hunt_proxies.yml'),
      '--org',
      'acme',
      '--since',
      '2026-03-01T00:00:00Z',
      '--until',
      '2026-04-01T00:00:00Z',
      '-f',
      'json',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<{ uuid: string; actor: string; ip: string }>;
    expect(rows.map((x) => x.uuid)).toEqual(['p1', 'p2']);
    expect(rows[0]!.ip).toBe('192.0.2.1');
  });

  it('refuses a file without a filter, and a bad time, naming them', async () => {
    const prose = await runCli([
      '--config',
      t.configPath,
      'hunt',
      join(dir, 'prose.yml'),
      '--org',
      'acme',
      '--since',
      '30d',
    ]);
    expect(prose.code).toBe(1);
    expect(prose.stderr).toContain('no System Log filter expression');
    const bad = await runCli([
      '--config',
      t.configPath,
      'hunt',
      join(dir, 'hunts', 'hunt_proxies.yml'),
      '--org',
      'acme',
      '--since',
      'yesterday',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--since');
  });

  it('lists files in every format, each with how it runs', async () => {
    const r = await runCli(['--config', t.configPath, 'rules', dir, '-f', 'json']);
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<{ file: string; format: string; runs: string }>;
    const by = Object.fromEntries(rows.map((x) => [x.file.split('/').pop(), [x.format, x.runs]]));
    expect(by).toEqual({
      'hunt_proxies.yml': ['okta-catalogue', 'hooklog hunt'],
      'own.yaml': ['hooklog', 'stream (match)'],
      'prose.yml': ['okta-catalogue', 'content pack (prose only)'],
      'sigma.yml': ['sigma', 'stream (match)'],
    });
  });

  it('rules test: per-rule counts and the first alerts over the stored events, progress on stderr, nothing sent', async () => {
    const file = join(t.dir, 'backtest.yaml');
    writeFileSync(
      file,
      stringify([
        { id: 'proxy', detection: 'securityContext.isProxy eq true' },
        {
          id: 'two-proxies',
          type: 'threshold',
          threshold: 2,
          window_ms: 2 * 86_400_000,
          detection: 'securityContext.isProxy eq true',
        },
        { id: 'never', detection: 'eventType eq "nothing.like.this"' },
      ]),
    );
    const r = await runCli([
      '--config',
      t.configPath,
      'rules',
      'test',
      file,
      '--org',
      'acme',
      '--since',
      '2026-03-01T00:00:00Z',
      '--until',
      '2026-04-01T00:00:00Z',
      '-f',
      'json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      rules: Array<{ rule: string; alerts: number }>;
      first: Array<{ rule: string; event_ids: string }>;
      summary: string;
    };
    expect(Object.fromEntries(out.rules.map((x) => [x.rule, x.alerts]))).toEqual({
      proxy: 2,
      'two-proxies': 1,
      never: 0,
    });
    expect(out.first.filter((x) => x.rule === 'proxy').map((x) => x.event_ids)).toEqual(['p1', 'p2']);
    expect(out.summary).toContain('3 events');
    expect(out.summary).toContain('nothing was sent');
    expect(r.stderr).toContain('progress: 100%');
  });

  it('rules lint: every problem with its file and line; exit 1 on errors', async () => {
    // Deep enough that file:line is longer than a table cell may be: the table must still show it whole.
    const lintDir = join(t.dir, 'lint', 'a-rather-long-directory-name-for-rules'.repeat(3));
    mkdirSync(lintDir, { recursive: true });
    writeFileSync(
      join(lintDir, 'catalogue.yml'),
      'title: Broken\nid: b1\ndetection:\n  okta_systemlog:\n    OIE: |\n      eventType eq "x" and\n      outcome.result equals "y"\n',
    );
    writeFileSync(
      join(lintDir, 'own.yaml'),
      stringify([
        { id: 'fine', detection: 'eventType eq "a" and result eq "FAILURE" and actorr.id pr' },
        { id: 'bad-mod', detection: { sel: { 'eventType|sounds_like': 'x' }, condition: 'sel' } },
      ]),
    );
    writeFileSync(join(lintDir, 'yaml.yml'), 'title: [unclosed\n');
    const r = await runCli(['--config', t.configPath, 'rules', 'lint', lintDir, '-f', 'json']);
    expect(r.code).toBe(1);
    const rows = (JSON.parse(r.stdout) as Array<{ where: string; severity: string; problem: string }>).map((x) => [
      x.where.replace(`${lintDir}/`, ''),
      x.severity,
      x.problem,
    ]);
    expect(rows).toEqual([
      ['catalogue.yml:7', 'error', expect.stringContaining('unknown operator "equals"')],
      ['own.yaml:2', 'warning', '"result" is not a LogEvent field; read as outcome.result'],
      [
        'own.yaml:2',
        'warning',
        '"actorr.id" is not a LogEvent field: it matches nothing on a real event; did you mean actor.id?',
      ],
      ['own.yaml:3', 'error', expect.stringContaining('unsupported modifier |sounds_like')],
      ['yaml.yml:2', 'error', expect.stringContaining('not YAML')],
    ]);
    const table = await runCli(['--config', t.configPath, 'rules', 'lint', lintDir]);
    expect(table.code).toBe(1);
    expect(`${lintDir}/catalogue.yml:7`.length).toBeGreaterThan(120);
    for (const where of ['catalogue.yml:7', 'own.yaml:2', 'own.yaml:3', 'yaml.yml:2'])
      expect(table.stdout).toContain(`${lintDir}/${where}`);
    expect(table.stdout).not.toContain('…');
    // --strict: a field the service may yet add is an error too.
    const strict = await runCli([
      '--config',
      t.configPath,
      'rules',
      'lint',
      join(lintDir, 'own.yaml'),
      '--strict',
      '-f',
      'json',
    ]);
    expect(
      (JSON.parse(strict.stdout) as Array<{ severity: string; problem: string }>)
        .filter((x) => x.problem.startsWith('"actorr.id"'))
        .map((x) => x.severity),
    ).toEqual(['error']);
  });

  it('rules lint checks risk declarations: in rule files with their line, and the config’s by rule id', async () => {
    const riskDir = join(t.dir, 'lint-risk');
    mkdirSync(riskDir);
    writeFileSync(join(riskDir, 'sigma.yml'), SIGMA);
    writeFileSync(
      join(riskDir, 'own.yaml'),
      stringify([
        { id: 'ok', detection: 'eventType eq "a"', risk: { level: 'high', ttl: '24h', reason: 'r' } },
        {
          id: 'by-ip',
          type: 'threshold',
          window_ms: 60_000,
          group_by: ['client.ipAddress'],
          detection: 'eventType eq "b"',
          risk: { level: 'high', ttl: '24h', reason: 'r' },
        },
      ]),
    );
    const config = parse(readFileSync(t.configPath, 'utf8')) as Record<string, unknown>;
    const withRisk = join(t.dir, 'risk.yaml');
    const risk = (rules: Record<string, unknown>) =>
      writeFileSync(withRisk, stringify({ ...config, alerting: { rule_paths: [riskDir], risk: { rules } } }));
    risk({ 'no.such.rule': { level: 'low', ttl: '1h', reason: 'r' } });
    // The config's own paths: an id no rule has is an error; the file's misfit rule too, at its line.
    let r = await runCli(['--config', withRisk, 'rules', 'lint', '-f', 'json']);
    expect(r.code).toBe(1);
    expect(
      (JSON.parse(r.stdout) as Array<{ where: string; problem: string }>).map((x) => [
        x.where.replace(`${riskDir}/`, ''),
        x.problem,
      ]),
    ).toEqual([
      [
        `own.yaml:${
          readFileSync(join(riskDir, 'own.yaml'), 'utf8')
            .split('\n')
            .findIndex((l) => l.includes('id: by-ip')) + 1
        }`,
        expect.stringContaining("a threshold rule declaring risk must group by the actor's id or login"),
      ],
    ]);
    writeFileSync(join(riskDir, 'own.yaml'), stringify([{ id: 'ok', detection: 'eventType eq "a"' }]));
    r = await runCli(['--config', withRisk, 'rules', 'lint', '-f', 'json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual([
      {
        where: `${withRisk}:1`,
        severity: 'error',
        problem: 'alerting.risk.rules.no.such.rule: no loaded rule has this id',
      },
    ]);
    // A Sigma rule loaded as published takes its risk from the config.
    risk({ '9d9d9d9d-0000-4000-8000-000000000001': { level: 'medium', ttl: '2h', reason: 'locked out' } });
    r = await runCli(['--config', withRisk, 'rules', 'lint', '-f', 'json']);
    expect([r.code, JSON.parse(r.stdout)]).toEqual([0, []]);
  });

  it('reads durations back from now and ISO instants', () => {
    const now = Date.parse('2026-03-10T00:00:00Z');
    expect(parseInstant('30d', 'since', now)).toBe(now - 30 * 86_400_000);
    expect(parseInstant('2026-03-01T00:00:00Z', 'since', now)).toBe(Date.parse('2026-03-01T00:00:00Z'));
    expect(parseInstant('2026-03-01 12:00', 'since', now)).toBe(Date.parse('2026-03-01T12:00:00Z'));
    expect(() => parseInstant('soon', 'since', now)).toThrow(/--since/);
  });
});
