/**
 * The Grafana dashboard (examples/observability/grafana/dashboards/hooklog.json)
 * queries only metrics hooklog exposes: a real `hooklog start` (embedded, with
 * an event hook, a token hook and a polled org configured, so every component
 * has registered its metrics) is scraped, and every metric name in every
 * panel's PromQL must be in its /metrics.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedOrg } from './simulated-org/index.js';
import { REPO_DIR, startDaemon, stopDaemon, type Daemon } from './support/cli.js';
import { writeTestConfig } from './support/hooklog-config.js';

interface Panel {
  title: string;
  targets?: Array<{ expr: string }>;
  panels?: Panel[];
}
const dashboard = JSON.parse(
  readFileSync(join(REPO_DIR, 'examples/observability/grafana/dashboards/hooklog.json'), 'utf8'),
) as { panels: Panel[] };

/** Metric names in a PromQL expression: hooklog's, with a histogram's _bucket/_sum/_count folded to its name. */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b(hooklog_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, ''));
}

describe('Grafana dashboard', () => {
  let sim: SimulatedOrg | undefined;
  let daemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    await sim?.stop();
  });

  it('queries only metrics that exist in /metrics', async () => {
    sim = await SimulatedOrg.start({});
    const inst = writeTestConfig({
      extra: {
        orgs: [
          {
            id: 'dash',
            base_url: sim.url,
            auth: { ssws: { token: 'sim-token' } },
            system_log: { start: '1d', poll_interval_ms: 500 },
          },
        ],
        token_hooks: [
          {
            id: 'tokens',
            org: 'dash',
            auth: { type: 'header', header: 'authorization', secrets: ['token-secret-0123456789abcdef'] },
            rules: [],
          },
        ],
      },
    });
    daemon = await startDaemon(['--config', inst.configPath]);
    const text = await (await fetch(`${daemon.url}/metrics`)).text();
    const exposed = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));

    const queried = new Map<string, string>();
    const walk = (panels: Panel[]) => {
      for (const p of panels) {
        for (const t of p.targets ?? []) for (const name of metricNames(t.expr)) queried.set(name, p.title);
        walk(p.panels ?? []);
      }
    };
    walk(dashboard.panels);
    expect(queried.size).toBeGreaterThan(25);
    const missing = [...queried]
      .filter(([name]) => !exposed.has(name))
      .map(([name, panel]) => `${name} (panel "${panel}")`);
    expect(missing).toEqual([]);
  }, 120_000);
});
