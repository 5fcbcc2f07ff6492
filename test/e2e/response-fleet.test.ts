/**
 * The response loop in a fleet, on the real broker with the real CLI: three
 * `hooklog start` processes (receivers and alerting) share six simulated orgs,
 * one per risk-changes partition. Risk changes for users of every org arrive
 * once the group has settled; each SET must be sent once, by one instance
 * (each org's by the instance that owns its partition), verified by the org,
 * and each action run once.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { silentLogger } from '../../platform/log.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { riskChange } from '../../consumers/response/testing.js';
import { kafkaBrokerList, kafkaBrokers } from '../kafka/inject.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { spawnHooklog, withOwnDataDir, type Instance } from '../support/instances.js';
import { randomName, waitFor } from '../support/wait.js';
import {
  appendChanges,
  changedResends,
  freePort,
  responseSections,
  startResponseOrgs,
  type ResponseOrg,
} from './response.js';

const PARTITIONS = 6;
const all: Instance[] = [];
let orgs: ResponseOrg[] = [];
let stream: Stream | undefined;
afterAll(async () => {
  if (process.env.FLEET_DEBUG)
    for (const i of all) writeFileSync(join(tmpdir(), `response-fleet-${i.name}.log`), i.output());
  for (const i of all) await i.kill('SIGKILL');
  for (const o of orgs) await o.sim.stop();
  await stream?.close();
});

describe('the response loop in a fleet of three', () => {
  it('sends each SET once, by the one instance owning its org, and runs each action once', async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const names = ['a', 'b', 'c'];
    orgs = await startResponseOrgs(
      6,
      PARTITIONS,
      issuer,
      names.map((n) => `tok-${n}`),
    );
    const group = randomName('resp');
    const inst = writeTestConfig({ kafkaBrokers: kafkaBrokers(), extra: responseSections(orgs, issuer, group) });
    const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
    const prefix = base.stream!.topic_prefix as string;
    writeFileSync(inst.configPath, stringify({ ...base, stream: { ...base.stream, partitions: PARTITIONS } }));
    // One issuer: instance a serves the well-known documents the orgs fetch (every instance has the same key).
    const start = (name: string) => {
      const own = withOwnDataDir(inst.configPath, name);
      const cfg = parse(readFileSync(own, 'utf8')) as Record<string, unknown>;
      writeFileSync(own, stringify({ ...cfg, server: { host: '127.0.0.1', port: name === 'a' ? port : 0 } }));
      const p = spawnHooklog(name, ['--config', own, '--roles', 'receivers,alerting'], { ORG_TOKEN: `tok-${name}` });
      all.push(p);
      return p;
    };
    const [a, b, c] = names.map(start) as [Instance, Instance, Instance];
    await Promise.all([a, b, c].map((i) => i.started(120_000)));
    // The groups have settled: each instance holds two partitions of each of the response consumers' topics.
    const holds = (i: Instance, g: string) => {
      const last = i
        .lines()
        .filter((l) => l.msg === 'kafka partitions assigned' && l.group === g)
        .at(-1);
      return (last?.partitions as number[] | undefined)?.length ?? 0;
    };
    await waitFor(() => [a, b, c].every((i) => holds(i, `${group}.sets`) === 2 && holds(i, `${group}.actions`) === 2), {
      what: 'two partitions of each group per instance',
      timeoutMs: 60_000,
    });

    stream = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: randomName('e2e'), logger: silentLogger() });
    const ann = { id: '00uann', login: 'ann@acme.test' };
    const bob = { id: '00ubob', login: 'bob@acme.test' };
    for (const o of orgs) {
      const up = riskChange(o.id, ann, 'none', 'high');
      await appendChanges(stream, prefix, [
        up,
        riskChange(o.id, bob, 'none', 'medium'),
        riskChange(o.id, ann, 'high', 'none', { cause: 'expiry', alert_id: up.alert_id }),
      ]);
    }
    await waitFor(() => orgs.every((o) => o.sets.distinct === 3 && o.users.count('clear_sessions') === 1), {
      what: 'three SETs and one action in every org',
      timeoutMs: 60_000,
    });

    // Each instance logs set_sent once the delivery is recorded (just after the org's 202).
    const sentBy = await waitFor(
      () => {
        const by = new Map<string, string[]>();
        for (const i of [a, b, c])
          for (const l of i.lines().filter((x) => x.msg === 'set_sent'))
            by.set(String(l.jti), [...(by.get(String(l.jti)) ?? []), i.name]);
        return orgs.every((o) => o.sets.sets.every((s) => by.has(s.jti))) ? by : undefined;
      },
      { what: 'every delivery recorded' },
    );
    for (const o of orgs) {
      // Once: no repeat reached the org, and each jti was sent by one instance.
      expect(o.sets.accepted).toHaveLength(3);
      expect(changedResends(o.sets)).toEqual([]);
      const senders = o.sets.sets.map((s) => sentBy.get(s.jti));
      expect(senders.map((s) => s?.length)).toEqual([1, 1, 1]);
      // One sender per org: its SETs from one instance (the owner of its risk-changes partition) and its action
      // from one (the owner of its actions partition: another group, which may have placed it elsewhere).
      expect(new Set(senders.map((s) => s![0])).size).toBe(1);
      const calls = o.sim.requests.filter((r) => r.path.startsWith('/api/v1/users'));
      expect(calls).toHaveLength(1);
      expect(o.sim.violations).toEqual([]);
    }
    // The work was shared: every instance sent for some org.
    expect(new Set([...sentBy.values()].flat())).toEqual(new Set(names));
  }, 300_000);
});
