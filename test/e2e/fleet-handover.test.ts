/**
 * Hand-overs on a broker with Kafka's own default
 * `group.initial.rebalance.delay.ms` (3 s; the shared test broker sets 0),
 * between real `hooklog start --roles pollers` processes sharing four orgs:
 *
 * - SIGTERM: one is stopped and the other must poll every one of its orgs
 *   within 3 s of the signal;
 * - a fresh instance joining: the orgs it takes over must go unpolled for less
 *   than 1.5 s (from the old owner's last request to the new owner's first).
 *
 * A new owner that restores its cursors through a consumer group formed on the
 * hand-over path waits for that group's first join (≥ 3 s here) and fails
 * these. A fresh instance's cursors reader is such a group: it joins before the
 * instance joins the pollers' group, so the old owner polls until then.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startKafkaBroker, type KafkaBroker } from '../kafka/broker.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { spawnHooklog, type Instance } from '../support/instances.js';
import { waitFor } from '../support/wait.js';
import { orgsConfig, startOrgs, type FleetOrg } from './fleet.js';

const TERM_BOUND_MS = 3_000;
/** A fresh instance's take-over: about 0.3 s here, against about 2.8 s when its cursors reader joined on the way. */
const FRESH_BOUND_MS = 1_500;
const instances: Instance[] = [];
let orgs: FleetOrg[] = [];
let broker: KafkaBroker | undefined;
afterAll(async () => {
  // FLEET_DEBUG=1 keeps each instance's output in the temp dir, for reading after a failure.
  if (process.env.FLEET_DEBUG)
    for (const i of instances) writeFileSync(join(tmpdir(), `handover-${i.name}.log`), i.output());
  for (const i of instances) await i.kill('SIGKILL');
  for (const o of orgs) await o.sim.stop();
  await broker?.stop();
});

describe('a SIGTERM hand-over on a broker with the default initial rebalance delay', () => {
  it('moves every org of the stopped instance to the other within 3 s of the signal', async () => {
    broker = await startKafkaBroker({ serverProperties: { 'group.initial.rebalance.delay.ms': '3000' } });
    orgs = await startOrgs(4, 2, ['tok-a', 'tok-b'], 50);
    const inst = writeTestConfig({ kafkaBrokers: broker.brokers, extra: { orgs: orgsConfig(orgs) } });
    const start = (name: string) => {
      const p = spawnHooklog(name, ['--config', inst.configPath, '--roles', 'pollers'], { ORG_TOKEN: `tok-${name}` });
      instances.push(p);
      return p;
    };
    const polledBy = (o: FleetOrg, client: string, since: number) =>
      o.sim.requests.some((r) => r.client === `SSWS ${client}` && r.at >= since);
    const a = start('a');
    await a.started();
    const b = start('b');
    await b.started();
    // Each polls two orgs (one cursors partition each), none of them the other's.
    await waitFor(
      () => {
        const since = Date.now() - 1_500;
        return (
          orgs.filter((o) => polledBy(o, 'tok-a', since)).length === 2 &&
          orgs.filter((o) => polledBy(o, 'tok-b', since)).length === 2 &&
          orgs.every((o) => !(polledBy(o, 'tok-a', since) && polledBy(o, 'tok-b', since)))
        );
      },
      {
        timeoutMs: 60_000,
        what: 'a and b polling two orgs each',
        seen: () => {
          const since = Date.now() - 1_500;
          return {
            a: orgs.filter((o) => polledBy(o, 'tok-a', since)).map((o) => o.id),
            b: orgs.filter((o) => polledBy(o, 'tok-b', since)).map((o) => o.id),
          };
        },
      },
    );
    const ofA = orgs.filter((o) => polledBy(o, 'tok-a', Date.now() - 1_500));

    const termAt = Date.now();
    await a.kill('SIGTERM');
    expect(a.output()).toContain('"msg":"hooklog stopped"');
    await waitFor(() => ofA.filter((o) => !polledBy(o, 'tok-b', termAt)).map((o) => o.id), {
      until: (unpolled) => unpolled.length === 0,
      timeoutMs: 30_000,
      what: "b polling a's orgs",
    });
    const handOverMs = Math.max(
      ...ofA.map((o) => o.sim.requests.find((r) => r.client === 'SSWS tok-b' && r.at >= termAt)!.at - termAt),
    );
    console.log(`SIGTERM hand-over: ${handOverMs} ms after the signal (${ofA.length} orgs)`);
    expect(handOverMs).toBeLessThan(TERM_BOUND_MS);
  }, 180_000);

  it('a freshly started instance takes its share without a gap of the initial delay', async () => {
    broker ??= await startKafkaBroker({ serverProperties: { 'group.initial.rebalance.delay.ms': '3000' } });
    const fresh = await startOrgs(4, 2, ['tok-c', 'tok-d'], 50);
    orgs = [...orgs, ...fresh];
    const inst = writeTestConfig({ kafkaBrokers: broker.brokers, extra: { orgs: orgsConfig(fresh) } });
    const start = (name: string) => {
      const p = spawnHooklog(name, ['--config', inst.configPath, '--roles', 'pollers'], { ORG_TOKEN: `tok-${name}` });
      instances.push(p);
      return p;
    };
    const requestsBy = (o: FleetOrg, client: string) => o.sim.requests.filter((r) => r.client === `SSWS ${client}`);
    const c = start('c');
    await c.started();
    await waitFor(
      () => fresh.filter((o) => !requestsBy(o, 'tok-c').some((r) => r.at >= Date.now() - 1_500)).map((o) => o.id),
      {
        until: (unpolled) => unpolled.length === 0,
        timeoutMs: 60_000,
        what: 'c polling all four orgs',
      },
    );

    const d = start('d');
    await d.started();
    // d takes two orgs (one cursors partition each); c keeps the other two.
    const ofD = () => fresh.filter((o) => requestsBy(o, 'tok-d').length > 0);
    const taken = await waitFor(ofD, {
      until: (polling) => polling.length === 2,
      timeoutMs: 60_000,
      what: 'd polling two orgs',
      seen: () => ofD().map((o) => o.id),
    });
    const gaps = taken.map((o) => {
      const first = requestsBy(o, 'tok-d')[0]!.at;
      const lastOfC = Math.max(
        ...requestsBy(o, 'tok-c')
          .filter((r) => r.at <= first)
          .map((r) => r.at),
      );
      return first - lastOfC;
    });
    console.log(`fresh-instance hand-over: orgs unpolled for ${gaps.join(', ')} ms`);
    for (const gap of gaps) expect(gap).toBeLessThan(FRESH_BOUND_MS);
  }, 180_000);
});
