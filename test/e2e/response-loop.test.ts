/**
 * From a finding to the sign-in path, through the real CLI (`hooklog start`
 * with every role, the shared Kafka broker, embedded ClickHouse), with
 * `kill -9` where it hurts most. Events reach hooklog by its event hook; the
 * stateful impossible-travel rule fires; the user's risk goes high (i23a's
 * risk fold); the org receives the SET and verifies it against the JWKS it
 * fetches from hooklog's well-known URL; the user's sessions are cleared; the
 * token hook denies that user; the contribution expires and a SET lowers the
 * risk again.
 *
 * 1. ann's trip: the token hook denies her; the org has her SET and, before it
 *    answers, the instance is killed (between the alert and the recorded SET).
 *    The next one sends the same bytes again: the org counts one SET. Her
 *    sessions are cleared once.
 * 2. bob's trip: once the org has his SET, the instance is killed as his
 *    sessions call arrives (between the SET and the action). The next one
 *    clears his sessions, once.
 * 3. The token hook denies bob, not cid; ann's contribution expires: a SET
 *    lowers her risk and the token hook lets her through. Every SET has one
 *    delivery row.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { riskTravelEvents, riskTravelRules } from '../../consumers/alerting/testing/events.js';
import { USER_RISK_CHANGE } from '../../consumers/response/config.js';
import { HOOK_SECRET, postToken, sampleRequest } from '../../receivers/token-hook/testing.js';
import { delivery } from '../fixtures/index.js';
import { kafkaBrokerList, kafkaBrokers } from '../kafka/inject.js';
import { silentLogger } from '../../platform/log.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { runCli } from '../support/cli.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { spawnHooklog, type Instance } from '../support/instances.js';
import { randomName, waitFor } from '../support/wait.js';
import {
  changedResends,
  freePort,
  makeTopicsReadAtStart,
  responseSections,
  startResponseOrg,
  type ResponseOrg,
} from './response.js';

/**
 * A finding's contribution lasts this long (event time + ttl, by the wall clock): bob's, from a trip near the wall
 * clock, outlives the test. Both once had ANN_LEFT_MS: under load the test ran past bob's expiry too, and its SET
 * made a fourth delivery row where the last wait wanted exactly three (the failure in a full `npm test`).
 */
const TTL_MS = 600_000;
/**
 * ann's trip is placed TTL_MS − ANN_LEFT_MS in the past, so her contribution expires this long after it is posted:
 * past her denial, checked through a before a is killed at her SET (seconds). It was checked after two and then
 * three starts once: at a load average of 20 on 2 cores a start took up to 43 s and she had expired by then.
 */
const ANN_LEFT_MS = 60_000;
const GAP_MS = 5_000;

const instances: Instance[] = [];
let org: ResponseOrg | undefined;
afterAll(async () => {
  // RESPONSE_DEBUG=1 keeps each instance's output in the temp dir, for reading after a failure.
  if (process.env.RESPONSE_DEBUG)
    for (const i of instances) writeFileSync(join(tmpdir(), `response-loop-${i.name}.log`), i.output());
  for (const i of instances) await i.kill('SIGKILL');
  await org?.sim.stop();
});

describe('from a finding to the sign-in path, with kill -9 between the alert and the SET and between the SET and the action', () => {
  it('one verified SET per change; sessions cleared once per user; the token hook denies; the expiry lowers the risk', async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const inst = writeTestConfig({ kafkaBrokers: kafkaBrokers() });
    org = await startResponseOrg(inst.org, issuer, ['tok-a', 'tok-b', 'tok-c', 'tok-cli']);
    const o = org;
    const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, unknown>;
    const stream = base.stream as { kafka: object };
    writeFileSync(
      inst.configPath,
      stringify({
        ...base,
        // The broker's least session time-out (group.min.session.timeout.ms): the next instance takes the killed
        // one's partitions once it is evicted.
        stream: { ...stream, kafka: { ...stream.kafka, session_timeout_ms: 6_000 } },
        server: { host: '127.0.0.1', port },
        alerting: {
          group: randomName('alerting'),
          rules: riskTravelRules(`${TTL_MS / 1000}s`),
          allowed_lateness_ms: 0,
          max_batch_wait_ms: 50,
          risk: { expiry_check_interval_ms: 200 },
        },
        token_hooks: [
          {
            id: 'th',
            org: inst.org,
            auth: { type: 'header', secrets: [HOOK_SECRET] },
            rules: [
              {
                name: 'deny-high',
                when: { risk: { user: ['high'] } },
                actions: [{ deny: { error_summary: 'At risk' } }],
              },
            ],
          },
        ],
        ...responseSections([o], issuer, randomName('resp')),
      }),
    );
    const probe = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('probe'),
      logger: silentLogger(),
    });
    try {
      await makeTopicsReadAtStart(probe, (base.stream as { topic_prefix: string }).topic_prefix, 2);
    } finally {
      await probe.close();
    }
    const start = async (name: string) => {
      const p = spawnHooklog(name, ['--config', inst.configPath], { ORG_TOKEN: `tok-${name}` });
      instances.push(p);
      await p.started(120_000);
      return p;
    };
    // Paris, then New York GAP_MS later (a finding), then a tick moving the watermark past both (no lateness allowed):
    // a later trip must start after the previous tick, or its Paris sign-in would be late and dropped.
    let watermark = 0;
    const trip = async (user: string, tripAt: number) => {
      expect(tripAt - GAP_MS).toBeGreaterThan(watermark);
      watermark = Date.now() - 200;
      const events = riskTravelEvents(o.id, [{ user, tripAt }], watermark, GAP_MS).map(
        (r) => JSON.parse(r.value.toString()) as object,
      );
      expect(await postDelivery(issuer, inst.hookId, delivery(o.id, inst.hookId, events))).toBe(204);
    };
    const setsOf = (user: string) =>
      o.sets.sets
        .filter(
          (s) =>
            (s.claims.events[USER_RISK_CHANGE]!.subject as { user: { email: string } }).user.email ===
            `${user}@${o.id}.example`,
        )
        .map(
          (s) =>
            `${String(s.claims.events[USER_RISK_CHANGE]!.previous_level)}→${String(s.claims.events[USER_RISK_CHANGE]!.current_level)}`,
        );

    // The token hook's answer for a user: `denied`, or what it said instead.
    const verdict = async (user: string) => {
      const req = sampleRequest();
      req.data.context.user.id = `00u${user}`;
      const r = await postToken(issuer, req);
      const said = JSON.stringify(r.json) ?? '(no body)';
      return r.status === 200 && said.includes('At risk') ? 'denied' : `${r.status} ${said.slice(0, 300)}`;
    };

    // 1. Killed when the org has ann's SET but before it answers, once a's token hook denies her (her risk is on the
    // risk topic before her SET is signed: seconds after the trip, with no start in between, so well before her
    // expiry); a's sessions call (if any) never takes effect.
    const a = await start('a');
    let killed: Promise<string> | null = null;
    o.sets.onReceive = async () => {
      // Every push of a waits for the kill (a repeat after a time-out too): none of them is answered while a lives.
      killed ??= (async () => {
        const seen = await waitFor(() => verdict('ann'), {
          until: (v) => v === 'denied',
          what: 'ann denied by a',
          timeoutMs: 30_000,
        }).catch((err: Error) => err.message);
        await a.kill('SIGKILL');
        return seen;
      })();
      await killed;
    };
    o.users.beforePerform = async (_action, _user, client) => {
      if (client !== 'SSWS tok-a') return;
      await waitFor(() => !a.running(), {
        what: 'a killed',
        seen: () => ({ sets: o.sets.accepted.length }),
        timeoutMs: 60_000,
      });
      return 'drop';
    };
    const annExpiry = Date.now() + ANN_LEFT_MS;
    await trip('ann', annExpiry - TTL_MS);
    await waitFor(() => killed !== null && !a.running() && o.sets.accepted.length > 0, {
      what: "a killed at ann's SET",
      seen: () => ({ running: a.running(), sets: o.sets.accepted.length }),
      timeoutMs: 60_000,
    });
    expect(await killed).toBe('denied');
    // Copies of one SET: a's push, and any repeat of it a made after a time-out while the kill was coming.
    expect(o.sets.distinct).toBe(1);

    // 2. b sends ann's SET again (the same bytes) and clears her sessions, and is killed at bob's sessions call.
    const b = await start('b');
    await waitFor(() => o.sets.accepted.length >= 2 && o.users.count('clear_sessions', '00uann') === 1, {
      what: "ann's SET again and her sessions cleared",
      seen: () => ({ sets: o.sets.accepted.length, cleared: o.users.count('clear_sessions', '00uann') }),
      timeoutMs: 60_000,
    });
    let bDead = false;
    o.users.beforePerform = async (_action, user, client) => {
      if (client !== 'SSWS tok-b' || user !== '00ubob') return;
      await waitFor(() => setsOf('bob'), {
        until: (s) => s.length === 1,
        what: "bob's SET at the org",
        timeoutMs: 30_000,
      });
      bDead = true;
      await b.kill('SIGKILL');
      return 'drop';
    };
    await waitFor(() => Date.now() - 1_000 - GAP_MS > watermark, {
      what: 'time past the last tick',
      seen: () => `${watermark + 1_000 + GAP_MS - Date.now()} ms to go`,
    });
    await trip('bob', Date.now() - 1_000);
    await waitFor(() => bDead && !b.running(), {
      what: 'b killed at the action',
      seen: () => ({ killed: bDead, running: b.running(), bob: setsOf('bob') }),
      timeoutMs: 60_000,
    });
    expect(o.users.count('clear_sessions', '00ubob')).toBe(0);

    // 3. c clears bob's sessions; the token hook denies bob, not cid.
    o.users.beforePerform = null;
    const c = await start('c');
    await waitFor(() => o.users.count('clear_sessions', '00ubob'), {
      until: (n) => n === 1,
      what: "bob's sessions cleared",
      timeoutMs: 60_000,
    });
    await waitFor(() => verdict('bob'), { until: (v) => v === 'denied', what: 'bob denied', timeoutMs: 30_000 });
    expect(await verdict('cid')).not.toBe('denied');

    // ann's contribution expires: a SET lowers her risk, and the token hook lets her through.
    await waitFor(() => setsOf('ann'), {
      until: (sets) => sets.length === 2,
      what: "ann's risk lowered",
      timeoutMs: Math.max(0, annExpiry - Date.now()) + 30_000,
    });
    await waitFor(() => verdict('ann'), { until: (v) => v !== 'denied', what: 'ann let through', timeoutMs: 10_000 });
    expect(await verdict('bob')).toBe('denied');

    expect(setsOf('ann')).toEqual(['low→high', 'high→low']);
    expect(setsOf('bob')).toEqual(['low→high']);
    expect(o.sets.distinct).toBe(3);
    expect(changedResends(o.sets)).toEqual([]);
    expect(o.sets.refused).toEqual([]);
    expect(o.users.count('clear_sessions')).toBe(2);
    expect(o.sim.violations).toEqual([]);

    // The records, as an operator reads them (through c's admin socket).
    const cli = async (...args: string[]) => {
      const r = await runCli(['--config', inst.configPath, ...args], { ORG_TOKEN: 'tok-cli' });
      if (r.code !== 0) throw new Error(r.stderr);
      return r.stdout;
    };
    const listed = await waitFor(
      async () => JSON.parse(await cli('actions', 'list', '--format', 'json')) as Array<Record<string, unknown>>,
      {
        until: (rows) => rows.length === 2 && rows.every((x) => x.state === 'done'),
        what: 'both actions done in the actions table',
        timeoutMs: 60_000,
      },
    );
    expect(listed.map((x) => x.user_id).sort()).toEqual(['00uann', '00ubob']);
    expect(Number(listed.find((x) => x.user_id === '00ubob')!.attempts)).toBe(2);
    // Each delivery row whole (not a count): a time-out names which SETs were recorded, and how often.
    const delivered = await waitFor(
      async () =>
        JSON.parse(
          await cli('sql', 'SELECT jti, result, at FROM ssf_deliveries FINAL ORDER BY at', '-f', 'json'),
        ) as Array<{ jti: string; result: string; at: string }>,
      { until: (rows) => rows.length >= 3, what: 'three deliveries recorded', timeoutMs: 60_000 },
    );
    // One row per SET the org has, each accepted: none lost, none recorded twice across the kills.
    expect(delivered.map((d) => d.jti).sort()).toEqual(o.sets.sets.map((s) => s.jti).sort());
    expect(delivered.map((d) => d.result)).toEqual(['accepted', 'accepted', 'accepted']);
    await c.kill('SIGTERM');
  }, 400_000);
});
