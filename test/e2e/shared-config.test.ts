/**
 * Several instances on one host from one config file: `server.port: ${PORT}`
 * and `instance_id: ${INSTANCE}` typed by the schema (a number, a string),
 * set per process. Three receivers on the real broker, each on its own port,
 * each taking deliveries.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { delivery } from '../fixtures/index.js';
import { kafkaBrokers } from '../kafka/inject.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { hookEvent, spawnHooklog, type Instance } from '../support/instances.js';
import { freePort } from './hook-registration.js';

const instances: Instance[] = [];
afterEach(async () => {
  for (const i of instances.splice(0)) await i.kill('SIGTERM');
});

describe('one config file, three instances on one host', () => {
  it('runs each on the port its PORT names, under its own instance id', async () => {
    const inst = writeTestConfig({
      kafkaBrokers: kafkaBrokers(),
      extra: { roles: ['receivers'], instance_id: '${INSTANCE}', server: { host: '127.0.0.1', port: '${PORT}' } },
    });
    const ports = [await freePort(), await freePort(), await freePort()];
    for (const [i, port] of ports.entries())
      instances.push(
        spawnHooklog(`r${i}`, ['--config', inst.configPath], { PORT: String(port), INSTANCE: `receiver-${i}` }),
      );
    const urls = await Promise.all(instances.map((i) => i.address()));
    expect(urls).toEqual(ports.map((p) => `http://127.0.0.1:${p}`));
    await Promise.all(instances.map((i) => i.started()));
    for (const [i, r] of instances.entries()) {
      expect(r.lines().find((l) => l.msg === 'hooklog started')).toMatchObject({ instance: `receiver-${i}` });
      const body = delivery(inst.org, inst.hookId, [hookEvent(i)]);
      expect(await postDelivery(urls[i]!, inst.hookId, body)).toBe(204);
    }
    // A flag wins over the file for one process: a fourth on another port, same file.
    const port = await freePort();
    const extra = spawnHooklog(
      'flag',
      ['--config', inst.configPath, '--port', String(port), '--instance-id', 'by-flag'],
      {
        PORT: 'not-a-port',
        INSTANCE: 'unused',
      },
    );
    instances.push(extra);
    expect(await extra.address()).toBe(`http://127.0.0.1:${port}`);
    await extra.started();
    expect(extra.lines().find((l) => l.msg === 'hooklog started')).toMatchObject({ instance: 'by-flag' });
  }, 120_000);
});
