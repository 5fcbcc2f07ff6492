/**
 * A fleet agrees on alert states: two hooklog instances on one Kafka cluster
 * (this process and a `hooklog start` child, each with its own embedded
 * ClickHouse and its own sink group, so each store is written only from the
 * stream), one sign-in. An analyst's change
 * made on the first instance shows on the second, because it travels as a
 * record on `<prefix>.alert-states`, not as a write to one store; the session
 * signed by one instance is accepted by the other (same session secret).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { kafkaBrokers } from '../test/kafka/inject.js';
import { startDaemon, stopDaemon, type Daemon } from '../test/support/cli.js';
import { randomName, waitFor } from '../test/support/wait.js';
import {
  consoleConfigInput,
  deliverAndAlert,
  failedSignIn,
  freePort,
  ORG_A,
  postChange,
  signIn,
  startConsoleWorld,
  startSimulatedIdp,
  USERS,
  type ConsoleWorld,
} from './testing.js';

let one: ConsoleWorld | undefined;
let daemon: Daemon | undefined;
let idp: Awaited<ReturnType<typeof startSimulatedIdp>> | undefined;
afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  await one?.stop();
  await idp?.sim.stop();
});

describe('console in a fleet', () => {
  it("shows an analyst's change made on one instance on another", async () => {
    const brokers = kafkaBrokers();
    const ports = [await freePort(), await freePort()];
    idp = await startSimulatedIdp(ports.map((p) => `http://127.0.0.1:${p}/console/auth/callback`));
    const topicPrefix = randomName('fleet');
    const first = await startConsoleWorld({ kafkaBrokers: brokers, topicPrefix, sim: idp, port: ports[0] });
    one = first;
    const input = consoleConfigInput({ kafkaBrokers: brokers, topicPrefix, port: ports[1]!, issuer: idp.sim.url });
    const configPath = join(String(input.data_dir), '..', 'hooklog.yaml');
    writeFileSync(configPath, stringify(input));
    daemon = await startDaemon(['--config', configPath]);
    const two = { url: daemon.url };

    const ids = await deliverAndAlert(first, ORG_A, [failedSignIn('grace@a.example')]);
    const id = ids[0]!;
    // The second instance's store has the alert from the stream too.
    const alice = await signIn(first, USERS.alice);
    // The alert as an instance's API shows it, or the status it answered instead.
    type Alert = { alert: { status: string; resolution: string }; history: unknown[] };
    const getOn = (w: { url: string }) => async () => {
      const res = await fetch(`${w.url}/console/api/alerts/${id}`, { headers: { cookie: alice.cookie } });
      return res.status === 200 ? ((await res.json()) as Alert) : { answered: res.status };
    };
    const before = await waitFor(getOn(two), {
      until: (d): d is Alert => 'alert' in d,
      what: 'the alert on the second instance',
      timeoutMs: 60_000,
    });
    expect(before.alert.status).toBe('open');

    const res = await postChange(first, alice, {
      alert_ids: [id],
      action: 'close',
      resolution: 'benign',
      note: 'known VPN',
    });
    expect(res.status).toBe(200);
    const after = await waitFor(getOn(two), {
      until: (d): d is Alert => 'alert' in d && d.alert.status === 'closed',
      what: 'the change on the second instance',
      timeoutMs: 60_000,
    });
    expect(after.alert.resolution).toBe('benign');
    expect(after.history).toHaveLength(1);
    // And a change made on the second is seen by the first: one record stream, every store.
    const onTwo = await postChange(two, { ...alice }, { alert_ids: [id], action: 'reopen' }, { origin: two.url });
    expect(onTwo.status).toBe(200);
    await waitFor(getOn(first), {
      until: (d) => 'alert' in d && d.alert.status === 'open',
      what: 'the reopen on the first instance',
      timeoutMs: 60_000,
    });
  }, 240_000);
});
