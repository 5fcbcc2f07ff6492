/**
 * The rate budget across restarts and hand-overs, with real `hooklog start`
 * processes: one org whose System Log bucket is tight (10 requests per 5 s
 * window, `rate_limit_share` 0.5: 5 per window for hooklog), polled as fast
 * as the budget lets. The poller is killed with SIGKILL and restarted (same
 * data directory, so the same budget ledger), then handed over by SIGTERM to
 * an instance on "another host" (its own data directory: it knows nothing of
 * the window), which is in turn killed and restarted. The simulated org counts
 * hooklog's requests per window: none may exceed the share, none may be 429.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { kafkaBrokers } from '../kafka/inject.js';
import { history, SimulatedOrg } from '../simulated-org/index.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { spawnHooklog, withOwnDataDir, type Instance } from '../support/instances.js';
import { waitFor } from '../support/wait.js';

const LIMIT = 10;
const WINDOW_MS = 5_000;
const SHARE = 0.5;
const instances: Instance[] = [];
let sim: SimulatedOrg | undefined;
afterAll(async () => {
  if (process.env.FLEET_DEBUG)
    for (const i of instances) writeFileSync(join(tmpdir(), `budget-${i.name}-${i.child.pid}.log`), i.output());
  for (const i of instances) await i.kill('SIGKILL');
  await sim?.stop();
});

describe('the rate budget of a poller that is restarted and handed over', () => {
  it('never exceeds the share in any window, whoever holds the org', async () => {
    sim = await SimulatedOrg.start({
      auth: { ssws: ['tok-a', 'tok-b'] },
      rateLimit: { logs: { limit: LIMIT, windowMs: WINDOW_MS }, events: false },
    });
    sim.addLogEvents(history({ count: 200, days: 1, now: Date.now(), kind: 'log', seed: 7 }));
    const org = `budget-${Math.random().toString(36).slice(2, 7)}`;
    const inst = writeTestConfig({
      kafkaBrokers: kafkaBrokers(),
      extra: {
        orgs: [
          {
            id: org,
            base_url: sim.url,
            auth: { ssws: { token: '${ORG_TOKEN}' } },
            system_log: { start: '2d', poll_interval_ms: 100, rate_limit_share: SHARE },
          },
        ],
      },
    });
    const config = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, unknown>;
    const stream = config.stream as { kafka: object };
    // One cursor partition; the broker's least session time-out (group.min.session.timeout.ms), which is how long a
    // restart after SIGKILL waits for the killed member's eviction before it polls.
    writeFileSync(
      inst.configPath,
      stringify({
        ...config,
        stream: { ...stream, partitions: 1, kafka: { ...stream.kafka, session_timeout_ms: 6_000 } },
      }),
    );
    const hostB = withOwnDataDir(inst.configPath, 'host-b');
    const start = (name: string, configPath: string, token: string) => {
      const p = spawnHooklog(name, ['--config', configPath, '--roles', 'pollers'], { ORG_TOKEN: token });
      instances.push(p);
      return p;
    };
    const by = (token: string, since: number) =>
      sim!.requests.filter((r) => r.client === `SSWS ${token}` && r.at >= since).length;
    const windows = () => sim!.buckets.logs!.usedPerWindow.size;
    // Each life polls through at least one whole window, and is ended in the middle of one.
    const live = async (p: Instance, token: string) => {
      const since = Date.now();
      await p.started();
      await waitFor(() => by(token, since), { until: (n) => n > 0, timeoutMs: 30_000, what: `${p.name} polling` });
      const from = windows();
      await waitFor(() => windows() >= from + 2 && Date.now() % WINDOW_MS > WINDOW_MS / 2, {
        timeoutMs: 30_000,
        what: `${p.name} polling through a window`,
        seen: () => ({ 'windows()': windows(), 'Date.now() % WINDOW_MS': Date.now() % WINDOW_MS }),
      });
    };

    const a1 = start('a1', inst.configPath, 'tok-a');
    await live(a1, 'tok-a');
    await a1.kill('SIGKILL');
    const a2 = start('a2', inst.configPath, 'tok-a');
    await live(a2, 'tok-a');
    // Another host joins and, once a2 leaves, takes the org over in the middle of a window.
    const b1 = start('b1', hostB, 'tok-b');
    await b1.started();
    // Hand over late in a window whose share a2 has spent (it polls as fast as the budget lets it): b1's
    // first request, sent without knowing the window, lands in that window.
    await waitFor(() => Date.now() % WINDOW_MS > WINDOW_MS * 0.5 && Date.now() % WINDOW_MS < WINDOW_MS * 0.7, {
      timeoutMs: 2 * WINDOW_MS,
      intervalMs: 20,
      what: 'late in a window',
      seen: () => ({ 'Date.now() % WINDOW_MS': Date.now() % WINDOW_MS }),
    });
    await a2.kill('SIGTERM');
    await live(b1, 'tok-b');
    await b1.kill('SIGKILL');
    const b2 = start('b2', hostB, 'tok-b');
    await live(b2, 'tok-b');

    // The share itself, not what one holder allows itself (one less: room for a newcomer's blind request).
    const allowed = Math.floor(LIMIT * SHARE);
    const perWindow = [...sim.buckets.logs!.usedPerWindow.entries()].sort(([a], [b]) => a - b).map(([, n]) => n);
    console.log(`requests per ${WINDOW_MS} ms window (${allowed} allowed): ${perWindow.join(' ')}`);
    expect(perWindow.filter((n) => n > allowed)).toEqual([]);
    expect(sim.buckets.logs!.served429).toBe(0);
    expect(sim.violations).toEqual([]);
  }, 240_000);
});
