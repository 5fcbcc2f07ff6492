/**
 * The response loop in a fleet, on the real broker with the real CLI: three
 * `hooklog start` processes (receivers and alerting: the event and token
 * hooks, the rule engine, the risk fold, the transmitter and the executor)
 * share six simulated orgs, one per partition. Once the groups have settled,
 * impossible trips of two users of every org arrive by the event hooks; their
 * risk goes high. Each SET must be sent once, by one instance (each org's by
 * the instance owning its risk-changes partition), verified by the org; each
 * action run once; and the token hook of every instance must deny each user
 * within 5 s of the user's state being appended to `<prefix>.risk`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { riskTravelEvents, riskTravelRules } from '../../consumers/alerting/testing/events.js';
import { silentLogger } from '../../platform/log.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { HOOK_SECRET, postToken, sampleRequest } from '../../receivers/token-hook/testing.js';
import { riskTopics } from '../../schemas/risk.js';
import { delivery } from '../fixtures/index.js';
import { kafkaBrokerList, kafkaBrokers } from '../kafka/inject.js';
import { postDelivery, TEST_SECRET, writeTestConfig } from '../support/hooklog-config.js';
import { spawnHooklog, withOwnDataDir, type Instance } from '../support/instances.js';
import { randomName, waitFor } from '../support/wait.js';
import {
  changedResends,
  freePort,
  makeTopicsReadAtStart,
  responseSections,
  startResponseOrgs,
  type ResponseOrg,
} from './response.js';

const PARTITIONS = 6;
const CONVERGE_MS = 5_000;
const USERS = ['ann', 'bob'];
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
  it('sends each SET once, by the one instance owning its org; runs each action once; every token hook denies within 5 s', async () => {
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
    const inst = writeTestConfig({ kafkaBrokers: kafkaBrokers() });
    const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
    const prefix = base.stream!.topic_prefix as string;
    writeFileSync(
      inst.configPath,
      stringify({
        ...base,
        stream: { ...base.stream, partitions: PARTITIONS },
        event_hooks: orgs.map((o) => ({
          id: o.id,
          org: o.id,
          auth: { header: 'authorization', secrets: [TEST_SECRET] },
        })),
        alerting: {
          group: randomName('alerting'),
          rules: riskTravelRules('1h'),
          clickhouse: false,
          allowed_lateness_ms: 0,
          max_batch_wait_ms: 50,
        },
        token_hooks: orgs.map((o) => ({
          id: o.id,
          org: o.id,
          auth: { type: 'header', secrets: [HOOK_SECRET] },
          audit: { enabled: false },
          rules: [
            {
              name: 'deny-high',
              when: { risk: { user: ['high'] } },
              actions: [{ deny: { error_summary: 'At risk' } }],
            },
          ],
        })),
        ...responseSections(orgs, issuer, group),
      }),
    );
    // One issuer: instance a serves the well-known documents the orgs fetch (every instance has the same key).
    const start = (name: string) => {
      const own = withOwnDataDir(inst.configPath, name);
      const cfg = parse(readFileSync(own, 'utf8')) as Record<string, unknown>;
      writeFileSync(own, stringify({ ...cfg, server: { host: '127.0.0.1', port: name === 'a' ? port : 0 } }));
      const p = spawnHooklog(name, ['--config', own, '--roles', 'receivers,alerting'], { ORG_TOKEN: `tok-${name}` });
      all.push(p);
      return p;
    };
    stream = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('probe'),
      logger: silentLogger(),
    });
    await makeTopicsReadAtStart(stream, prefix, PARTITIONS);
    // a first, so the topics it makes have leaders before the others read them (the same start-up race).
    const fleet = [start('a')];
    await fleet[0]!.started(120_000);
    fleet.push(start('b'), start('c'));
    const urls = await Promise.all(fleet.map((i) => i.address(120_000)));
    await Promise.all(fleet.map((i) => i.started(120_000)));
    // The groups have settled: each instance holds two partitions of each of the response consumers' topics.
    const holds = (i: Instance, g: string) =>
      (
        i
          .lines()
          .filter((l) => l.msg === 'kafka partitions assigned' && l.group === g)
          .at(-1)?.partitions as number[] | undefined
      )?.length ?? 0;
    await waitFor(() => fleet.map((i) => [holds(i, `${group}.sets`), holds(i, `${group}.actions`)]), {
      until: (held) => held.every(([sets, actions]) => sets === 2 && actions === 2),
      what: 'two partitions of each response group per instance',
      timeoutMs: 60_000,
    });

    // The test's own reader of the risk topic: when each user's state was appended.
    const appended = new Map<string, number>();
    await stream!.watch(riskTopics(prefix).state, (records) => {
      for (const r of records) if (r.value.length > 0 && !appended.has(r.key!)) appended.set(r.key!, r.timestamp);
    });

    const now = Date.now();
    for (const [k, o] of orgs.entries()) {
      const trips = USERS.map((user, j) => ({ user, tripAt: now - 600_000 + j * 1000 }));
      const events = riskTravelEvents(o.id, trips, now - 1000).map((r) => JSON.parse(r.value.toString()) as object);
      expect(await postDelivery(urls[k % urls.length]!, o.id, delivery(o.id, o.id, events))).toBe(204);
    }

    // Every instance's token hook: the first instant it denied each user of each org.
    const denied = async (url: string, org: string, user: string) => {
      const req = sampleRequest();
      req.data.context.user.id = `00u${user}`;
      const r = await postToken(url, req, undefined, org);
      return r.status === 200 && JSON.stringify(r.json).includes('At risk');
    };
    const seen = new Map<string, number>();
    await waitFor(
      async () => {
        for (const o of orgs)
          for (const user of USERS)
            for (const [i, url] of urls.entries()) {
              const k = `${o.id}/${user}@${i}`;
              if (!seen.has(k) && (await denied(url, o.id, user))) seen.set(k, Date.now());
            }
        return seen.size === orgs.length * USERS.length * urls.length;
      },
      {
        timeoutMs: 90_000,
        intervalMs: 50,
        what: 'every instance to deny every user',
        seen: () => `denied so far (org/user@instance): ${[...seen.keys()].join(', ')}`,
      },
    );
    const lags: number[] = [];
    for (const o of orgs)
      for (const user of USERS) {
        const at = appended.get(`${o.id}/user/00u${user}`);
        for (const i of urls.keys()) lags.push(seen.get(`${o.id}/${user}@${i}`)! - (at ?? 0));
        expect(at, `${o.id}/${user}'s state on the topic`).toBeDefined();
        for (const i of urls.keys())
          expect(seen.get(`${o.id}/${user}@${i}`)! - at!, `${o.id}/${user} on ${names[i]}`).toBeLessThan(CONVERGE_MS);
      }

    console.log(
      `token hooks deny at most ${Math.max(...lags)} ms after the user's state was appended (${lags.length} checks)`,
    );
    await waitFor(
      () => orgs.map((o) => ({ org: o.id, sets: o.sets.distinct, cleared: o.users.count('clear_sessions') })),
      {
        until: (got) => got.every((o) => o.sets === 2 && o.cleared === 2),
        what: 'two SETs and two actions in every org',
        timeoutMs: 60_000,
      },
    );
    // Each instance logs set_sent once the delivery is recorded (just after the org's 202).
    const sentBy = await waitFor(
      () => {
        const by = new Map<string, string[]>();
        for (const i of fleet)
          for (const l of i.lines().filter((x) => x.msg === 'set_sent'))
            by.set(String(l.jti), [...(by.get(String(l.jti)) ?? []), i.name]);
        return by;
      },
      {
        until: (by) => orgs.every((o) => o.sets.sets.every((s) => by.has(s.jti))),
        what: 'every delivery recorded',
        seen: () => `SETs at the orgs: ${orgs.reduce((n, o) => n + o.sets.sets.length, 0)}`,
      },
    );
    for (const o of orgs) {
      // Once: no repeat reached the org, and each jti was sent by one instance.
      expect(o.sets.accepted).toHaveLength(2);
      expect(changedResends(o.sets)).toEqual([]);
      const senders = o.sets.sets.map((s) => sentBy.get(s.jti));
      expect(senders.map((s) => s?.length)).toEqual([1, 1]);
      // One sender per org: its SETs from one instance (the owner of its risk-changes partition); its actions from
      // one (the owner of its actions partition: another group, which may have placed it elsewhere).
      expect(new Set(senders.map((s) => s![0])).size).toBe(1);
      const calls = o.sim.requests.filter((r) => r.path.startsWith('/api/v1/users'));
      expect(calls).toHaveLength(2);
      expect(new Set(calls.map((r) => r.client)).size).toBe(1);
      expect(o.sim.violations).toEqual([]);
    }
    // The work was shared: every instance sent for some org.
    expect(new Set([...sentBy.values()].flat())).toEqual(new Set(names));
  }, 300_000);
});
