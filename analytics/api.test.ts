/**
 * The query API and `hooklog query`, end to end: a real `hooklog start`
 * (embedded stream, embedded ClickHouse) receives the planted events through
 * its event hook; the sink writes them to the events table; then the same query is
 * asked over HTTP (with and without a key, with wrong parameters) and from
 * the CLI through the admin socket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delivery } from '../test/fixtures/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../test/support/cli.js';
import { postDelivery, writeTestConfig, type TestInstance } from '../test/support/hooklog-config.js';
import { waitFor } from '../test/support/wait.js';
import { plant, SPRAY_IP } from '../bench/analytics/plants.js';
import { total } from '../test/support/metrics.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import { QUERIES } from './registry.js';
import { TEST_DATA, RANGE } from './testing.js';

const KEY = 'analyst-key-0123456789abcdef';
const SCOPED = 'scoped-key-0123456789abcdef';
let instance: TestInstance;
let daemon: Daemon;
let planted = 0;

beforeAll(async () => {
  instance = writeTestConfig({
    extra: {
      api: { keys: ['other-key-0123456789abcdefgh', KEY, { name: 'one-org', secret: SCOPED, orgs: ['some-org'] }] },
    },
  });
  daemon = await startDaemon(['--config', instance.configPath]);
  const { events } = plant(TEST_DATA);
  planted = events.length;
  for (let i = 0; i < events.length; i += 50) {
    expect([200, 204]).toContain(
      await postDelivery(
        daemon.url,
        instance.hookId,
        delivery(
          instance.org,
          instance.hookId,
          events.slice(i, i + 50).map((g) => g.event),
        ),
      ),
    );
  }
}, 120_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
});

/** `key` null: no Authorization header at all. */
const get = (path: string, key: string | null = KEY) =>
  fetch(`${daemon.url}${path}`, { headers: key === null ? {} : { authorization: `Bearer ${key}` } });

const sprayPath = () =>
  `/api/queries/password_spraying?${new URLSearchParams({ org: instance.org, ...RANGE, min_users: '10' })}`;

describe('GET /api/queries', () => {
  it('refuses requests without a key or with a wrong one', async () => {
    for (const key of [null, '', 'analyst-key-0123456789abcdeX', KEY.toUpperCase()]) {
      const res = await get('/api/queries', key);
      expect(res.status, String(key)).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
    expect((await get(sprayPath(), 'nope')).status).toBe(401);
  });

  it('lists every query with its parameters', async () => {
    const res = await get('/api/queries');
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      queries: Array<{ name: string; params: Array<{ name: string; type: string; required: boolean }> }>;
    };
    expect(body.queries.map((q) => q.name)).toEqual(QUERIES.map((q) => q.name));
    const spray = body.queries.find((q) => q.name === 'password_spraying')!;
    expect(spray.params).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'org', type: 'String', required: true }),
        expect.objectContaining({ name: 'min_users', type: 'UInt32', required: false }),
      ]),
    );
  });

  it('runs a query: JSON with columns and rows, the planted spray found once the sink has written it', async () => {
    // The sink may write the planted events over several inserts (an idle partition's first records go at
    // once), so a query between two of them sees part of the spray: wait until every event is inserted.
    await waitFor(
      async () => {
        const text = await (await fetch(`${daemon.url}/metrics`)).text();
        return total(text, 'hooklog_sink_rows_inserted_total', { table: EVENTS_TABLE });
      },
      {
        until: (n) => n >= planted,
        timeoutMs: 30_000,
        what: `the sink to have inserted all ${planted} planted events`,
      },
    );
    const res = await get(sprayPath());
    expect(res.status).toBe(200);
    const body = (await res.json()) as { query: string; columns: string[]; rows: Array<Record<string, unknown>> };
    expect(body.query).toBe('password_spraying');
    expect(body.columns.slice(0, 4)).toEqual(['ip', 'bucket', 'users', 'failures']);
    // UInt64 counts arrive quoted (64-bit safe).
    expect(body.rows).toEqual([expect.objectContaining({ ip: SPRAY_IP, users: '25' })]);
  });

  it('runs a query for every org with org=*, for a key that may see every org only', async () => {
    const all = `/api/queries/password_spraying?${new URLSearchParams({ org: '*', ...RANGE, min_users: '10' })}`;
    const res = await get(all);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { rows: Array<Record<string, unknown>> };
    expect(body.rows).toEqual([expect.objectContaining({ ip: SPRAY_IP, users: '25' })]);
    // A key scoped to orgs cannot read every org: the same 404 as an org it may not see.
    expect((await get(all, SCOPED)).status).toBe(404);
  });

  it('answers 400 naming the wrong parameter, 404 for an unknown query', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ org: instance.org, since: 'last week', until: RANGE.until }, 'since'],
      [{ since: RANGE.since, until: RANGE.until }, 'org'],
      [{ org: instance.org, ...RANGE, min_users: '-1' }, 'min_users'],
      [{ org: instance.org, ...RANGE, limit: '1; DROP TABLE events' }, 'limit'],
      [{ org: instance.org, ...RANGE, colour: 'red' }, 'colour'],
    ];
    for (const [params, param] of cases) {
      const res = await get(`/api/queries/password_spraying?${new URLSearchParams(params)}`);
      expect(res.status, param).toBe(400);
      const body = (await res.json()) as { error: string; param: string };
      expect(body.param).toBe(param);
      expect(body.error).toContain(`"${param}"`);
    }
    const twice = await get(`/api/queries/password_spraying?org=a&org=b&since=${RANGE.since}&until=${RANGE.until}`);
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { param: string }).param).toBe('org');
    expect((await get('/api/queries/no_such_query')).status).toBe(404);
  });
});

/** The daemon's JSON log lines logged as `msg`, from `from` characters of its output on. */
const logged = (msg: string, from: number): Array<Record<string, unknown>> =>
  daemon
    .output()
    .slice(from)
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === msg);

describe('refusals of the query API', () => {
  it('logs each refusal once with the key id (never the key) and counts it by reason', async () => {
    const metric = async (reason: string) =>
      total(await (await fetch(`${daemon.url}/metrics`)).text(), 'hooklog_api_refusals_total', { reason });
    const reasons = ['missing_key', 'wrong_key', 'other_org'];
    const before = Object.fromEntries(await Promise.all(reasons.map(async (r) => [r, await metric(r)] as const)));
    const from = daemon.output().length;
    const wrong = 'wrong-key-0123456789abcdefgh';
    const otherOrg = `/api/queries/password_spraying?${new URLSearchParams({ org: 'another-org', ...RANGE })}`;
    const allOrgs = `/api/queries/password_spraying?${new URLSearchParams({ org: '*', ...RANGE })}`;
    const cases: Array<{ path: string; key: string | null; status: number; reason: string; org?: string }> = [
      { path: '/api/queries', key: null, status: 401, reason: 'missing_key' },
      { path: sprayPath(), key: null, status: 401, reason: 'missing_key' },
      { path: '/api/queries', key: wrong, status: 401, reason: 'wrong_key' },
      { path: sprayPath(), key: SCOPED.toUpperCase(), status: 401, reason: 'wrong_key' },
      { path: otherOrg, key: SCOPED, status: 404, reason: 'other_org', org: 'another-org' },
      { path: allOrgs, key: SCOPED, status: 404, reason: 'other_org', org: '*' },
    ];
    const ids: string[] = [];
    for (const c of cases) {
      const res = await get(c.path, c.key);
      expect(res.status, `${c.reason} ${c.path}`).toBe(c.status);
      ids.push(res.headers.get('x-request-id') ?? '');
    }
    const lines = await waitFor(() => logged('api_refused', from), {
      until: (l) => l.length >= cases.length,
      timeoutMs: 10_000,
      what: `${cases.length} api_refused lines`,
    });
    expect(lines.map((l) => l.request_id)).toEqual(ids);
    cases.forEach((c, i) => {
      const line = lines[i]!;
      expect(line.reason, c.path).toBe(c.reason);
      expect(line.route).toBe(c.path === '/api/queries' ? '/api/queries' : '/api/queries/:name');
      expect(line.component).toBe('query-api');
      expect(line.org).toBe(c.org);
      expect(line.principal).toEqual(
        c.reason === 'other_org' ? { kind: 'key', id: 'one-org', name: 'one-org', role: 'viewer' } : null,
      );
    });
    // No key text anywhere in the log, the keys configured and the keys tried alike.
    const out = daemon.output();
    for (const key of [KEY, SCOPED, SCOPED.toUpperCase(), wrong]) expect(out).not.toContain(key);
    expect(await metric('missing_key')).toBe(before.missing_key! + 2);
    expect(await metric('wrong_key')).toBe(before.wrong_key! + 2);
    expect(await metric('other_org')).toBe(before.other_org! + 2);
  });

  it('counts nothing for a request that is served or wrong in its parameters', async () => {
    const text = async () => (await fetch(`${daemon.url}/metrics`)).text();
    const before = total(await text(), 'hooklog_api_refusals_total');
    const from = daemon.output().length;
    expect((await get('/api/queries')).status).toBe(200);
    expect((await get('/api/queries/no_such_query')).status).toBe(404);
    expect(
      (await get(`/api/queries/password_spraying?${new URLSearchParams({ org: 'some-org' })}`, SCOPED)).status,
    ).toBe(400);
    expect(total(await text(), 'hooklog_api_refusals_total')).toBe(before);
    expect(logged('api_refused', from)).toEqual([]);
  });
});

describe('hooklog query', () => {
  it('lists the queries', async () => {
    const r = await runCli(['--config', instance.configPath, 'query', '--list']);
    expect(r.code).toBe(0);
    for (const q of QUERIES) expect(r.stdout).toContain(q.name);
  });

  it('runs a query through the running hooklog, in every format', async () => {
    const args = [
      '--config',
      instance.configPath,
      'query',
      'brute_force',
      '--org',
      instance.org,
      '--since',
      RANGE.since,
      '--until',
      RANGE.until,
      '--param',
      'min_failures=10',
    ];
    const json = await runCli([...args, '--format', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const rows = JSON.parse(json.stdout) as Array<{ user: string; failures: string | number }>;
    expect(rows.map((r) => r.user)).toEqual(['user2@acme.example.com']);
    const csv = await runCli([...args, '--format', 'csv']);
    expect(csv.stdout.split('\r\n')[0]).toBe('user,bucket,failures,ips,sample_ips,successes');
    const table = await runCli(args);
    expect(table.stdout).toMatch(/user2@acme\.example\.com[\s\S]*\(1 row\)/);
  });

  it('names a wrong parameter and exits 1', async () => {
    const r = await runCli([
      '--config',
      instance.configPath,
      'query',
      'brute_force',
      '--org',
      instance.org,
      '--since',
      RANGE.since,
      '--until',
      'soon',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/QUERY_INVALID: parameter "until"/);
  });
});
