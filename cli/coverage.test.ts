/**
 * `hooklog coverage` counts only the event types the org's hooks carry, on a
 * real store (chdb, the shipped migrations) with arrivals as the sink writes
 * them and a config parsed as production parses it: once it counted every
 * System Log type, so hooks subscribed to one type were blamed for all the
 * others ("90% missed by hooks"). An org the config does not name is refused,
 * naming it, where the report once printed zeros; through the built CLI too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from './config/load.js';
import { coverageReport, renderCoverage } from './coverage.js';
import { runNamedQuery } from '../analytics/run.js';
import { migratedStore } from '../analytics/testing.js';
import type { Store } from '../platform/store/index.js';
import { runCli } from '../test/support/cli.js';
import { writeTestConfig } from '../test/support/hooklog-config.js';

const SECRET = 'event-hook-secret-0123456789';
const SINCE = '2026-03-01T00:00:00.000Z';
const UNTIL = '2026-03-01T02:00:00.000Z';

const config = parseConfig(
  {
    hook_registration: { public_url: 'https://hooklog.example.com/' },
    orgs: [{ id: 'acme', base_url: 'https://acme.example.com', auth: { ssws: { token: 't' } } }],
    event_hooks: [
      // acme's hook subscribes to two types (register:); beta's was registered by hand (no register:).
      {
        id: 'main',
        org: 'acme',
        auth: { secrets: [SECRET] },
        register: { event_types: ['user.session.start', 'user.session.end'] },
      },
      { id: 'beta-hook', org: 'beta', auth: { secrets: [SECRET] } },
    ],
  },
  {},
);

let n = 0;
/** One event's arrivals, as the sink writes them: a row per path that brought it. */
function arrived(org: string, type: string, paths: ReadonlyArray<'hook' | 'system-log'>): object[] {
  const published = `2026-03-01 00:${String(10 + (n % 40)).padStart(2, '0')}:00.000`;
  const uuid = `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
  return paths.map((path) => ({
    org,
    event_type: type,
    published,
    uuid,
    path,
    first_received: published.replace(':00.000', ':01.500'),
    copies: 1,
    hook_id: path === 'hook' ? 'main' : '',
  }));
}
const times = (k: number, rows: () => object[]) => Array.from({ length: k }, rows).flat();

describe('hooklog coverage', () => {
  let store: Store;
  const run = (name: string, params: Record<string, string>) => runNamedQuery(store, name, params);

  beforeAll(async () => {
    store = await migratedStore('coverage');
    await store.insertJson('arrivals', [
      // acme: the subscribed types: 8 by hook, 1 by both, 3 the hook missed.
      ...times(8, () => arrived('acme', 'user.session.start', ['hook'])),
      ...times(1, () => arrived('acme', 'user.session.start', ['hook', 'system-log'])),
      ...times(3, () => arrived('acme', 'user.session.start', ['system-log'])),
      // Types no hook of acme subscribes to: the System Log only, as they must be.
      ...times(30, () => arrived('acme', 'user.account.lock', ['system-log'])),
      ...times(10, () => arrived('acme', 'policy.lifecycle.update', ['system-log'])),
      // beta: its hook delivered user.session.start (one missed); app.* only by the System Log.
      ...times(4, () => arrived('beta', 'user.session.start', ['hook'])),
      ...times(1, () => arrived('beta', 'user.session.start', ['system-log'])),
      ...times(5, () => arrived('beta', 'app.lifecycle.create', ['system-log'])),
    ]);
  });
  afterAll(async () => {
    await store?.close();
  });

  it("counts only the types the org's hooks subscribe to (register:), naming the types left out", async () => {
    const r = await coverageReport(config, { org: 'acme', since: SINCE, until: UNTIL }, run);
    expect(r.totals).toMatchObject({ events: 12, hooks_only: 8, log_only: 3, both: 1, missed_by_hooks: 3 / 12 });
    expect(r.coverage.rows.map((row) => row.event_type)).toEqual(['user.session.start']);
    expect(r.hook_types).toEqual({ from: 'register', types: ['user.session.end', 'user.session.start'] });
    expect(r.left_out).toEqual([
      { event_type: 'user.account.lock', events: 30 },
      { event_type: 'policy.lifecycle.update', events: 10 },
    ]);
    const table = renderCoverage(r, 'table');
    expect(table).toContain('(25.00% missed by hooks)');
    expect(table).toContain(
      'Left out (no hook of the org carries them): 2 type(s), 40 events: user.account.lock (30), policy.lifecycle.update (10).',
    );
    expect(JSON.parse(renderCoverage(r, 'json'))).toMatchObject({ left_out: r.left_out, hook_types: r.hook_types });
  });

  it('without register:, counts the types the hooks delivered', async () => {
    const r = await coverageReport(config, { org: 'beta', since: SINCE, until: UNTIL }, run);
    expect(r.totals).toMatchObject({ events: 5, hooks_only: 4, log_only: 1, both: 0, missed_by_hooks: 0.2 });
    expect(r.hook_types).toEqual({ from: 'delivered', types: ['user.session.start'] });
    expect(r.left_out).toEqual([{ event_type: 'app.lifecycle.create', events: 5 }]);
  });

  it('refuses an org the config does not name, naming it and the ones it does', async () => {
    await expect(coverageReport(config, { org: 'nosuchorg', since: SINCE, until: UNTIL }, run)).rejects.toThrow(
      /^unknown org "nosuchorg": the config names "acme", "beta"$/,
    );
    const inst = writeTestConfig();
    const cli = await runCli(['--config', inst.configPath, 'coverage', '--org', 'nosuchorg', '--since', SINCE]);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toContain(`hooklog: QUERY_INVALID: unknown org "nosuchorg": the config names "${inst.org}"`);
  }, 60_000);
});
