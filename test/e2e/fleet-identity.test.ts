/**
 * Identities on one Kafka cluster, with the real CLI: two instances started
 * from one config file run side by side without fencing each other, each
 * (org, API) polled by one of them; and an owner paused with SIGSTOP until
 * the group moved its orgs elsewhere is fenced when it wakes: it appends no
 * event and moves no cursor behind the new owner's back.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { silentLogger } from '../../platform/log.js';
import { topicNames } from '../../platform/stream/headers.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { Collector, duplicates } from '../simulated-org/harness.js';
import { kafkaBrokerList, kafkaBrokers } from '../kafka/inject.js';
import { delivery } from '../fixtures/index.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { hookEvent, spawnHooklog, type Instance } from '../support/instances.js';
import { waitFor } from '../support/wait.js';
import { addLive, cursorViolations, orgsConfig, overlaps, startOrgs, type FleetOrg } from './fleet.js';

const PARTITIONS = 2;
/** The orgs' rate-limit window in the fencing test. */
const WINDOW_MS = 30_000;
const instances: Instance[] = [];
let orgs: FleetOrg[] = [];
let reader: Stream | undefined;
afterEach(async () => {
  // FLEET_DEBUG=1 keeps each instance's output in the temp dir, for reading after a failure.
  if (process.env.FLEET_DEBUG)
    for (const i of instances) writeFileSync(join(tmpdir(), `fleet-${i.name}.log`), i.output());
  for (const i of instances.splice(0)) await i.kill('SIGKILL');
  for (const o of orgs.splice(0)) await o.sim.stop();
  await reader?.close();
  reader = undefined;
});

async function fleetConfig(requestTimeoutMs?: number, windowMs?: number) {
  orgs = await startOrgs(4, PARTITIONS, ['tok-a', 'tok-b'], 300, windowMs);
  const inst = writeTestConfig({
    kafkaBrokers: kafkaBrokers(),
    extra: { orgs: orgsConfig(orgs, 300, requestTimeoutMs), roles: ['receivers', 'pollers'] },
  });
  const prefix = (parse(readFileSync(inst.configPath, 'utf8')) as { stream: { topic_prefix: string } }).stream
    .topic_prefix;
  return { inst, topics: topicNames(prefix) };
}

const requestsBy = (client: string, from = 0) =>
  orgs.flatMap((o) => o.sim.requests.filter((r) => r.client === `SSWS ${client}` && r.at >= from));
const fenced = (i: Instance) => /STREAM_FENCED|PRODUCER_FENCED|INVALID_PRODUCER_EPOCH/.test(i.output());

describe('instances from one config on one cluster', () => {
  it('run side by side for a minute: neither is fenced, each org is polled by one of them', async () => {
    const { inst, topics } = await fleetConfig();
    const a = spawnHooklog('a', ['--config', inst.configPath], { ORG_TOKEN: 'tok-a' });
    const b = spawnHooklog('b', ['--config', inst.configPath], { ORG_TOKEN: 'tok-b' });
    instances.push(a, b);
    const urls = [await a.address(), await b.address()];
    await Promise.all([a.started(), b.started()]);
    // Both members in the group, each with one cursor partition (and so two orgs).
    await waitFor(
      () => requestsBy('tok-a', Date.now() - 2_000).length > 0 && requestsBy('tok-b', Date.now() - 2_000).length > 0,
      {
        timeoutMs: 30_000,
        what: 'both instances polling',
        seen: () => ({
          'requests in the last 2 s by a': requestsBy('tok-a', Date.now() - 2_000).length,
          'by b': requestsBy('tok-b', Date.now() - 2_000).length,
        }),
      },
    );
    const settled = Date.now() + 1_000;
    const seq = { n: 0 };
    const acked: string[] = [];
    const until = Date.now() + 60_000;
    for (let i = 0; Date.now() < until; i++) {
      const e = hookEvent(i);
      expect(await postDelivery(urls[i % 2]!, inst.hookId, delivery(inst.org, inst.hookId, [e]))).toBe(204);
      acked.push(e.uuid);
      addLive(orgs, 3, seq);
      await waitFor(() => Date.now() >= until || requestsBy(i % 2 ? 'tok-b' : 'tok-a', Date.now() - 1_000).length > 0, {
        what: 'polling to go on',
        seen: () => ({
          'last request at': requestsBy(i % 2 ? 'tok-b' : 'tok-a').reduce((at, r) => Math.max(at, r.at), 0),
          now: Date.now(),
        }),
      });
      await new Promise((r) => setTimeout(r, 500)); // pacing of the traffic, not synchronisation
    }
    expect(a.running() && b.running()).toBe(true);
    expect(fenced(a) || fenced(b)).toBe(false);
    expect(overlaps(orgs, settled)).toEqual([]);
    for (const o of orgs) {
      const clients = new Set(o.sim.requests.filter((r) => r.at >= settled).map((r) => r.client));
      expect(clients.size, `${o.id} polled by ${[...clients].join(', ')}`).toBe(1);
    }
    expect(new Set(orgs.flatMap((o) => o.sim.requests.filter((r) => r.at >= settled).map((r) => r.client))).size).toBe(
      2,
    );

    // What both appended: every hook and every polled event once, cursors only ever forward.
    reader = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: 'fleet-reader', logger: silentLogger() });
    const logs = await Collector.start(reader, topics.logs);
    const cursors = await Collector.start(reader, topics.cursors);
    const expected = acked.length + orgs.reduce((n, o) => n + o.sim.logs.length, 0);
    await waitFor(() => logs.records.length, {
      until: (n) => n >= expected,
      timeoutMs: 30_000,
      what: `${expected} records on the logs topic`,
    });
    const uuids = logs.values().map((v) => String(v.uuid));
    expect(duplicates(uuids)).toEqual([]);
    expect(cursorViolations(cursors.records)).toEqual([]);
  }, 180_000);

  // Paused late in a rate-limit window, a leaves a budget claim in flight in the host's ledger as the next
  // window begins. b's first request of that window once waited for that claim (a paused process is alive,
  // so it held until it expired after 120 s): "b not polling every org within 45 s", seen once in CI when a
  // minute boundary happened to fall in the hand-over. The pause is now placed so that one always does. The
  // orgs' windows are 30 s here (the same 10 requests a second): the next one begins 4 to 8 s after the pause
  // and lasts past the hand-over (within 25 s of it), and finding the place in a window takes half as long.
  it(
    'fences a paused owner: woken after the hand-over, it appends nothing and moves no cursor',
    { timeout: 180_000 },
    async () => {
      // A long request time-out: on waking, the reply that arrived meanwhile is read before any timer gives up on it.
      const { inst, topics } = await fleetConfig(60_000, WINDOW_MS);
      const a = spawnHooklog('a', ['--config', inst.configPath], { ORG_TOKEN: 'tok-a' });
      instances.push(a);
      await a.started();
      await waitFor(
        () => orgs.filter((o) => !o.sim.requests.some((r) => r.client === 'SSWS tok-a' && r.doneAt)).map((o) => o.id),
        {
          until: (unpolled) => unpolled.length === 0,
          timeoutMs: 30_000,
          what: 'a polling every org',
        },
      );
      const seq = { n: 0 };
      // Pause late in one of the orgs' rate-limit windows, so that the next begins while a is paused with a
      // request in flight (its budget claim in the host's shared ledger), before b's first request.
      await waitFor(() => Date.now() % WINDOW_MS, {
        until: (at) => at >= WINDOW_MS - 8_000 && at < WINDOW_MS - 4_000,
        timeoutMs: WINDOW_MS + 10_000,
        intervalMs: 100,
        what: 'late in a rate-limit window',
      });
      // Pause a while one of its requests is being answered: it wakes up holding a page of new events to store.
      const target = orgs[0]!.sim;
      target.faults.next({ kind: 'slow', ms: 1_500 });
      const paused = new Promise<void>((resolve) =>
        target.on('request', function onRequest(r: { client?: string }) {
          if (r.client !== 'SSWS tok-a') return;
          a.child.kill('SIGSTOP');
          target.off('request', onRequest);
          resolve();
        }),
      );
      addLive(orgs, 20, seq);
      await paused;
      const stoppedAt = Date.now();
      const b = spawnHooklog('b', ['--config', inst.configPath], { ORG_TOKEN: 'tok-b' });
      instances.push(b);
      // b joins; the group waits for a's session to time out, then b owns every org and claims their partitions.
      await waitFor(() => orgs.filter((o) => !o.sim.requests.some((r) => r.client === 'SSWS tok-b')).map((o) => o.id), {
        until: (unpolled) => unpolled.length === 0,
        timeoutMs: 45_000,
        what: 'b polling every org',
      });
      const handedOver = Date.now();
      expect(handedOver - stoppedAt).toBeLessThan(25_000);
      addLive(orgs, 20, seq);
      await waitFor(
        () =>
          orgs
            .filter((o) => !o.sim.requests.some((r) => r.client === 'SSWS tok-b' && r.at > handedOver + 300))
            .map((o) => o.id),
        { until: (unpolled) => unpolled.length === 0, what: 'b polling the new events' },
      );

      a.child.kill('SIGCONT');
      const wokeAt = Date.now();
      // a learns it was expelled, rejoins, and the group shares the partitions out again.
      await waitFor(() => a.lines().some((l) => l.msg === 'ownership changed' && Date.parse(String(l.time)) > wokeAt), {
        seen: () => a.lines().slice(-3),
        timeoutMs: 30_000,
        what: 'a to learn what it owns now',
      });
      addLive(orgs, 20, seq);
      await waitFor(() => orgs.filter((o) => !o.sim.requests.some((r) => r.at > wokeAt + 3_000)).map((o) => o.id), {
        until: (unpolled) => unpolled.length === 0,
        timeoutMs: 30_000,
        what: 'polling to go on after the wake-up',
      });
      expect(a.running() && b.running()).toBe(true);
      // It did try to store that page, and was refused: the new owner's claim had fenced it.
      await waitFor(() => a.output().includes('STREAM_FENCED'), {
        what: 'the woken owner to be fenced',
        seen: () => a.output().slice(-500),
      });

      // Before it rejoined, the woken owner started no request (its lease had lapsed).
      const rejoined = Math.min(
        ...a
          .lines()
          .filter((l) => l.msg === 'ownership changed' && Date.parse(String(l.time)) > wokeAt)
          .map((l) => Date.parse(String(l.time))),
      );
      expect(requestsBy('tok-a', wokeAt).filter((r) => r.at < rejoined)).toEqual([]);
      expect(overlaps(orgs, rejoined + 1_000)).toEqual([]);

      reader = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: 'fleet-reader', logger: silentLogger() });
      const logs = await Collector.start(reader, topics.logs);
      const cursors = await Collector.start(reader, topics.cursors);
      const expected = orgs.reduce((n, o) => n + o.sim.logs.length, 0);
      await waitFor(() => logs.records.length, {
        until: (n) => n >= expected,
        timeoutMs: 30_000,
        what: `${expected} events on the logs topic`,
      });
      expect(duplicates(logs.values().map((v) => String(v.uuid)))).toEqual([]);
      expect(logs.records.length).toBe(expected);
      expect(cursorViolations(cursors.records)).toEqual([]);
    },
  );
});
