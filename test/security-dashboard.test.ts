/**
 * The Grafana "security overview" (examples/observability/grafana/dashboards/security.json)
 * runs against ClickHouse: every panel query and the org variable's query are
 * expanded the way the grafana-clickhouse-datasource plugin expands them
 * (its macros, the dashboard's time range and `${org:singlequote}`) and run on
 * chdb over the analytics test data set, with alerts and alert states beside
 * it, and the panels that must show something do.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadedStore, RANGE, TEST_DATA } from '../analytics/testing.js';
import type { Store } from '../platform/store/index.js';
import { SIGN_IN_EVENT_TYPES } from '../schemas/event-types.js';
import { REPO_DIR } from './support/cli.js';

interface Panel {
  type: string;
  title: string;
  targets?: Array<{ rawSql: string; format: number }>;
}
const dashboard = JSON.parse(
  readFileSync(join(REPO_DIR, 'examples/observability/grafana/dashboards/security.json'), 'utf8'),
) as { panels: Panel[]; templating: { list: Array<{ name: string; query: string }> } };

/**
 * The plugin's macros over a time range [from, to] and an interval, and
 * Grafana's variable interpolation of the org variable; the dashboard names
 * the database `hooklog` (compose's), the test's store has its own.
 */
function expand(
  sql: string,
  o: { fromMs: number; toMs: number; intervalS: number; orgs: readonly string[]; db: string },
): string {
  const s = (ms: number) => Math.floor(ms / 1000);
  const out = sql
    .replace(
      /\$__timeFilter\(([^)]+)\)/g,
      (_, c: string) => `${c} >= toDateTime(${s(o.fromMs)}) AND ${c} <= toDateTime(${s(o.toMs)})`,
    )
    .replace(
      /\$__timeInterval\(([^)]+)\)/g,
      (_, c: string) => `toStartOfInterval(toDateTime(${c}), INTERVAL ${o.intervalS} second)`,
    )
    .replaceAll('$__fromTime', `toDateTime(${s(o.fromMs)})`)
    .replaceAll('$__toTime', `toDateTime(${s(o.toMs)})`)
    .replaceAll('$__interval_s', String(o.intervalS))
    .replaceAll('${org:singlequote}', o.orgs.map((x) => `'${x.replace(/'/g, "\\\\'")}'`).join(','))
    .replaceAll('hooklog.', `${o.db}.`);
  if (/\$\{?__|\$\{?org/.test(out)) throw new Error(`unexpanded macro or variable in: ${out}`);
  return out;
}

let store: Store;
const ORG = 'acme';

beforeAll(async () => {
  ({ store } = await loadedStore());
  const t = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
  const start = TEST_DATA.start.getTime();
  await store.insertJson(
    'alerts',
    ['a1', 'a2', 'a3'].map((id, i) => ({
      event_time: t(start + 3600_000 * (i + 1)),
      first_event_time: t(start + 3600_000 * (i + 1)),
      alert_id: id,
      rule_id: i === 2 ? 'mfa_fatigue' : 'brute_force',
      rule_title: i === 2 ? 'MFA fatigue' : 'Brute force',
      severity: i === 2 ? 'high' : 'medium',
      kind: 'threshold',
      org: ORG,
      group_key: '["u"]',
      event_count: 3,
      event_ids: [],
    })),
  );
  await store.insertJson('alert_states', [
    {
      at: t(start + 7200_000),
      org: ORG,
      alert_id: 'a1',
      change_id: 'c1',
      action: 'acknowledge',
      status: 'acknowledged',
      resolution: '',
      assignee: null,
      note: '',
      actor: 'x',
      actor_name: 'x',
      actor_kind: 'user',
      request_id: 'r',
    },
    {
      at: t(start + 7300_000),
      org: ORG,
      alert_id: 'a1',
      change_id: 'c2',
      action: 'close',
      status: 'closed',
      resolution: 'false_positive',
      assignee: null,
      note: '',
      actor: 'x',
      actor_name: 'x',
      actor_kind: 'user',
      request_id: 'r',
    },
  ]);
}, 180_000);

afterAll(async () => {
  await store?.close();
});

describe('Grafana security overview', () => {
  const panels = dashboard.panels.filter((p) => p.type !== 'row');
  const opts = () => ({
    fromMs: Date.parse(RANGE.since),
    toMs: Date.parse(RANGE.until),
    intervalS: 3600,
    orgs: [ORG],
    db: store.database,
  });

  it('has queries that name the sign-in event types of the query library', () => {
    const signIns = panels.filter((p) => p.targets?.[0]?.rawSql.includes("'user.session.start'"));
    expect(signIns.length).toBeGreaterThanOrEqual(3);
    for (const p of signIns)
      for (const t of SIGN_IN_EVENT_TYPES) expect(p.targets![0]!.rawSql, p.title).toContain(`'${t}'`);
  });

  it('runs every panel query on ClickHouse, and the panels that must show something do', async () => {
    const rows = new Map<string, Array<Record<string, unknown>>>();
    for (const p of panels) {
      expect(p.targets, p.title).toHaveLength(1);
      rows.set(p.title, await store.query(expand(p.targets![0]!.rawSql, opts())));
    }
    expect(rows.get('Sign-ins and failures')!.length).toBeGreaterThan(24);
    expect(Number(rows.get('Sign-in failure rate')![0]!.failure_rate)).toBeGreaterThan(0);
    expect(rows.get('Top failing users')!.length).toBeGreaterThan(0);
    expect(rows.get('Top failing IPs')!.length).toBeGreaterThan(0);
    expect(rows.get('MFA verifications by outcome')!.length).toBeGreaterThan(0);
    expect(rows.get('Push challenges and factor changes')!.length).toBeGreaterThan(0);
    expect(rows.get('Admin changes by kind')!.length).toBeGreaterThan(0);
    expect(rows.get('Alerts by rule')).toEqual([
      { rule: 'Brute force', alerts: '2' },
      { rule: 'MFA fatigue', alerts: '1' },
    ]);
    expect(rows.get('Alerts by status')).toEqual([
      { status: 'closed', alerts: '1' },
      { status: 'open', alerts: '2' },
    ]);
    expect(rows.get('Closed alerts by resolution')).toEqual([{ resolution: 'false_positive', alerts: '1' }]);
    // Another org's panels are empty: the org variable scopes every query.
    const other = await store.query(
      expand(panels.find((p) => p.title === 'Alerts by rule')!.targets![0]!.rawSql, { ...opts(), orgs: ['nobody'] }),
    );
    expect(other).toEqual([]);
  });

  it('lists the orgs for the org variable', async () => {
    const v = dashboard.templating.list.find((x) => x.name === 'org')!;
    const orgs = (await store.query<{ org: string }>(expand(v.query, opts()))).map((r) => r.org);
    expect(orgs).toContain(ORG);
  });
});
