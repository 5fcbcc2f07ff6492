/**
 * Risk across a fleet, with the real CLI on the real broker: two `hooklog
 * start` processes, each with receivers and alerting (they share the logs
 * and alerts partitions), each answering the token hook. Impossible trips
 * delivered to one instance's event hook become risk changes; the token hook
 * on EVERY instance denies each user within 5 s of the user's state being
 * appended to `<prefix>.risk` (its record timestamp), and stops denying as
 * soon as the contribution has expired.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { riskTravelEvents, riskTravelRules } from '../../consumers/alerting/testing/events.js';
import { silentLogger } from '../../platform/log.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { HOOK_SECRET, postToken, sampleRequest } from '../../receivers/token-hook/testing.js';
import { riskTopics } from '../../schemas/risk.js';
import { delivery } from '../fixtures/index.js';
import { kafkaBrokers } from '../kafka/inject.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { spawnHooklog, withOwnDataDir, type Instance } from '../support/instances.js';
import { randomName, waitFor } from '../support/wait.js';

const CONVERGE_MS = 5000;
const all: Instance[] = [];
let stream: Stream | undefined;
afterAll(async () => {
  await Promise.all(all.map((i) => i.kill('SIGTERM')));
  await stream?.close();
});

describe('risk in the sign-in path across a fleet (Kafka, real CLI)', () => {
  it('every instance denies a user within 5 s of the change, and none after it expired', async () => {
    const suffix = randomName('f');
    const inst = writeTestConfig({
      kafkaBrokers: kafkaBrokers(),
      extra: {
        roles: ['receivers', 'alerting'],
        alerting: {
          group: `alerting-${suffix}`,
          rules: riskTravelRules('1h'),
          clickhouse: false,
          allowed_lateness_ms: 0,
          max_batch_wait_ms: 50,
          risk: { expiry_check_interval_ms: 200 },
        },
        token_hooks: [
          {
            id: 'th',
            org: '${HOOKLOG_TEST_ORG}',
            auth: { type: 'header', secrets: [HOOK_SECRET] },
            audit: { enabled: false },
            rules: [
              {
                name: 'deny-high',
                when: { risk: { user: ['high'] } },
                actions: [{ deny: { error_summary: 'At risk' } }],
              },
            ],
          },
        ],
      },
    });
    // writeTestConfig names the org; the token hook takes it from the environment.
    const org = inst.org;
    const prefix = (parse(readFileSync(inst.configPath, 'utf8')) as { stream: { topic_prefix: string } }).stream
      .topic_prefix;
    const env = { HOOKLOG_TEST_ORG: org };
    for (const name of ['a', 'b'])
      all.push(spawnHooklog(name, ['--config', withOwnDataDir(inst.configPath, name)], env));
    const urls = await Promise.all(all.map((i) => i.address()));
    await Promise.all(all.map((i) => i.started()));

    // The test's own reader of the risk topic: when each user's state was appended.
    stream = await openKafkaStream({
      brokers: kafkaBrokers().split(','),
      clientId: randomName('probe'),
      logger: silentLogger(),
    });
    const appended = new Map<string, number>();
    await stream.watch(riskTopics(prefix).state, (records) => {
      for (const r of records) {
        const user = r.key!.split('/').pop()!;
        if (r.value.length > 0 && !appended.has(user)) appended.set(user, r.timestamp);
      }
    });

    const now = Date.now();
    // ann and bob: an hour's contribution from ten minutes ago; cid's expires 15 s from now (every instance denies
    // every user well within a second here, and must within CONVERGE_MS of the change).
    const cidExpires = now + 15_000;
    const trips = [
      { user: 'ann', tripAt: now - 600_000 },
      { user: 'bob', tripAt: now - 590_000 },
      { user: 'cid', tripAt: cidExpires - 3_600_000 },
    ];
    const events = riskTravelEvents(org, trips, now - 1000).map((r) => JSON.parse(r.value.toString()) as object);
    expect(await postDelivery(urls[0]!, inst.hookId, delivery(org, inst.hookId, events))).toBe(204);

    const denied = async (url: string, user: string) => {
      const req = sampleRequest();
      req.data.context.user.id = `00u${user}`;
      const r = await postToken(url, req);
      return r.status === 200 && JSON.stringify(r.json).includes('At risk');
    };
    // For every user and instance: the first instant it answered deny.
    const seen = new Map<string, number>();
    await waitFor(
      async () => {
        for (const t of trips)
          for (const [i, url] of urls.entries()) {
            const k = `${t.user}@${i}`;
            if (!seen.has(k) && (await denied(url, t.user))) seen.set(k, Date.now());
          }
        return seen.size === trips.length * urls.length;
      },
      {
        timeoutMs: 90_000,
        intervalMs: 50,
        what: 'every instance to deny every user',
        seen: () => `denied so far (user@instance): ${[...seen.keys()].join(', ')}; ${all[0]!.output().slice(-1500)}`,
      },
    );
    for (const t of trips) {
      const at = appended.get(`00u${t.user}`);
      expect(at, `${t.user}'s state on the topic`).toBeDefined();
      for (const i of urls.keys())
        expect(seen.get(`${t.user}@${i}`)! - at!, `${t.user} on instance ${i}`).toBeLessThan(CONVERGE_MS);
    }
    // A user not at risk is never denied.
    for (const url of urls) expect(await denied(url, 'dan')).toBe(false);

    // cid's contribution expires: every instance lets cid through at once, the others stay denied.
    await waitFor(() => Date.now(), { until: (v) => v >= cidExpires, timeoutMs: 60_000, what: "cid's expiry" });
    for (const url of urls) {
      expect(await denied(url, 'cid')).toBe(false);
      expect(await denied(url, 'ann')).toBe(true);
    }
  }, 240_000);
});
