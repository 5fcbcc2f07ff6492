/**
 * Roles (`--roles`), readiness per role, and receivers that never wait for a
 * consumer group: the real CLI on the real broker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { delivery } from '../fixtures/index.js';
import { hookEvent, spawnHooklog, withOwnDataDir, type Instance } from '../support/instances.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { kafkaBrokers } from '../kafka/inject.js';
import { waitFor } from '../support/wait.js';

const instances: Instance[] = [];
afterEach(async () => {
  for (const i of instances.splice(0)) await i.kill('SIGKILL');
});

describe('roles', () => {
  it('runs only the roles asked for, and /readyz answers for those', async () => {
    const inst = writeTestConfig({ kafkaBrokers: kafkaBrokers() });
    const r = spawnHooklog('receivers', ['--config', inst.configPath, '--roles', 'receivers']);
    instances.push(r);
    const url = await r.address();
    await r.started();
    expect(await postDelivery(url, inst.hookId, delivery(inst.org, inst.hookId, [hookEvent(0)]))).toBe(204);
    const ready = await fetch(`${url}/readyz?role=receivers`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks).toEqual({
      stream: 'ok',
      receivers: 'ok',
    });
    expect((await fetch(`${url}/readyz?role=sink`)).status).toBe(404);
    // No sink here: it never opened the store (embedded ClickHouse stays free for the process that runs the sink).
    expect(r.output()).not.toContain('"component":"clickhouse-sink"');

    const w = spawnHooklog('workers', ['--config', withOwnDataDir(inst.configPath, 'workers'), '--roles', 'sink']);
    instances.push(w);
    await w.started();
    const wUrl = await w.address();
    // Without the receivers role, the hook routes are not served; health still is.
    expect((await fetch(`${wUrl}/hooks/events/${inst.hookId}`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`${wUrl}/readyz`)).status).toBe(200);
  }, 120_000);

  it('accepts hooks while its consumer groups are still settling', async () => {
    const inst = writeTestConfig({ kafkaBrokers: kafkaBrokers() });
    // A member that stops answering holds the sink group's next rebalance until its session times out (10 s).
    const stuck = spawnHooklog('stuck', ['--config', inst.configPath, '--roles', 'sink']);
    instances.push(stuck);
    await stuck.started();
    stuck.child.kill('SIGSTOP');
    try {
      const fresh = spawnHooklog('fresh', [
        '--config',
        withOwnDataDir(inst.configPath, 'fresh'),
        '--roles',
        'receivers,sink',
      ]);
      instances.push(fresh);
      const url = await fresh.address();
      // It listens before its stream is open and answers 503 until then (restart.test.ts); the receivers' readiness
      // says when hooks are taken.
      await waitFor(async () => (await fetch(`${url}/readyz?role=receivers`)).status, {
        until: (status) => status === 200,
        timeoutMs: 30_000,
        what: "the fresh instance's receivers ready",
      });
      expect(await postDelivery(url, inst.hookId, delivery(inst.org, inst.hookId, [hookEvent(1)]))).toBe(204);
      const ready = await fetch(`${url}/readyz?role=receivers`);
      expect(ready.status).toBe(200);
      // The acknowledgement came before the sink's group had settled.
      expect(fresh.output()).not.toContain('"msg":"hooklog started"');
      expect((await fetch(`${url}/readyz`)).status).toBe(503);
      await fresh.started(60_000);
    } finally {
      stuck.child.kill('SIGCONT');
    }
  }, 120_000);
});
