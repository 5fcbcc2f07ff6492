/**
 * The fleet, end to end on the real broker with the real CLI: three hooklog
 * processes with receivers, pollers and alerting, and a fourth running the
 * sink into embedded ClickHouse, polling six simulated orgs while hooks are
 * delivered round-robin to the live instances (a failed delivery retried once
 * on another, as the service does). Mid-stream one instance is killed with
 * SIGKILL, another stopped with SIGTERM and started again.
 *
 * Afterwards: every acknowledged hook event and every retained System Log
 * event is in ClickHouse exactly once (count FINAL = distinct sent, raw rows =
 * records on the topic); no two instances' requests to one (org, API)
 * overlapped outside the hand-over bounds; no cursor repeated or went back; no
 * rate-limit violation; every alert once on the topic and in the table; and
 * the hand-overs took at most 15 s after the kill and 3 s after the SIGTERM.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { silentLogger } from '../../platform/log.js';
import { topicNames } from '../../platform/stream/headers.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { Collector, duplicates } from '../simulated-org/harness.js';
import { kafkaBrokerList, kafkaBrokers } from '../kafka/inject.js';
import { delivery } from '../fixtures/index.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { hookEvent, spawnHooklog, withOwnDataDir, type Instance } from '../support/instances.js';
import { waitFor } from '../support/wait.js';
import { addLive, cursorViolations, orgsConfig, overlaps, startOrgs, type FleetOrg } from './fleet.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const PARTITIONS = 6;
const KILL_BOUND_MS = 15_000;
const TERM_BOUND_MS = 3_000;
const MARK = 'user.account.lock';

const all: Instance[] = [];
let orgs: FleetOrg[] = [];
let reader: Stream | undefined;
afterAll(async () => {
  // FLEET_DEBUG=1 keeps each process's output in the temp dir, for reading after a failure.
  if (process.env.FLEET_DEBUG)
    for (const i of all) writeFileSync(join(tmpdir(), `fleet-${i.name}-${i.child.pid}.log`), i.output());
  for (const i of all) await i.kill('SIGKILL');
  for (const o of orgs) await o.sim.stop();
  await reader?.close();
});

describe('a fleet of hooklog processes on one Kafka cluster', () => {
  it('stores every hook and polled event once, polls each org from one instance, alerts once, across kill -9 and a restart', async () => {
    orgs = await startOrgs(6, PARTITIONS, ['tok-0', 'tok-1', 'tok-2'], 500);
    const inst = writeTestConfig({ kafkaBrokers: kafkaBrokers() });
    const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
    const config = {
      ...base,
      // The broker's least session time-out (group.min.session.timeout.ms): the killed instance's orgs move once it
      // has been evicted.
      stream: {
        ...base.stream,
        partitions: PARTITIONS,
        kafka: { ...(base.stream!.kafka as object), session_timeout_ms: 6_000 },
      },
      orgs: orgsConfig(orgs),
      alerting: {
        group: `alerting-${base.stream!.topic_prefix as string}`,
        max_batch_wait_ms: 100,
        rules: [
          {
            id: 'account-locked',
            type: 'match',
            detection: { s: { eventType: MARK }, condition: 's' },
            group_by: ['uuid'],
          },
        ],
      },
    };
    writeFileSync(inst.configPath, stringify(config));
    const topics = topicNames(base.stream!.topic_prefix as string);
    const sinkConfig = withOwnDataDir(inst.configPath, 'sink');
    const sinkDataDir = (parse(readFileSync(sinkConfig, 'utf8')) as { data_dir: string }).data_dir;
    const sql = async (q: string) => (await queryViaAdminSocket(sinkDataDir, q))!.rows as Array<Record<string, string>>;

    const roles = ['--roles', 'receivers,pollers,alerting'];
    const start = (i: number) => {
      const p = spawnHooklog(`i${i}`, ['--config', inst.configPath, ...roles], { ORG_TOKEN: `tok-${i}` });
      all.push(p);
      return p;
    };
    const sink = spawnHooklog('sink', ['--config', sinkConfig, '--roles', 'sink'], { ORG_TOKEN: 'not-polling' });
    all.push(sink);
    const live: Array<{ p: Instance; url: string } | null> = [null, null, null];
    for (let i = 0; i < 3; i++) {
      const p = start(i);
      live[i] = { p, url: await p.address() };
    }
    await Promise.all([sink.started(), ...live.map((l) => l!.p.started())]);
    const polling = (client: string, since: number) =>
      orgs.some((o) => o.sim.requests.some((r) => r.client === `SSWS ${client}` && r.at >= since));
    await waitFor(() => [0, 1, 2].filter((i) => !polling(`tok-${i}`, Date.now() - 2_000)), {
      until: (idle) => idle.length === 0,
      timeoutMs: 30_000,
      what: 'all three instances polling',
    });
    const settled = Date.now();

    // Hooks: round-robin over the live instances; a failed delivery is retried once on the next one.
    const acked = new Map<string, boolean>(); // uuid → marked
    let n = 0;
    let rr = 0;
    let deliveries = 0;
    let sending = true;
    const deliver = async () => {
      while (sending) {
        const events = Array.from({ length: 5 }, (_, k) => ({
          ...hookEvent(n++),
          ...(k === 0 ? { eventType: MARK } : {}),
        }));
        const body = delivery(inst.org, inst.hookId, events);
        for (let attempt = 0; attempt < 2; attempt++) {
          const targets = live.filter((l): l is { p: Instance; url: string } => l !== null);
          const t = targets[rr++ % targets.length]!;
          const status = await postDelivery(t.url, inst.hookId, body).catch(() => 0);
          if (status === 204) {
            events.forEach((e, k) => acked.set(e.uuid, k === 0));
            break;
          }
        }
        deliveries++;
        await new Promise((r) => setTimeout(r, 50)); // the service's pace, not synchronisation
      }
    };
    const seq = { n: 0 };
    const arrivals = setInterval(() => addLive(orgs, 2, seq), 500);
    const sender = deliver();
    try {
      await waitFor(() => deliveries, {
        until: (count) => count >= 40,
        timeoutMs: 30_000,
        what: 'deliveries before the kill',
      });

      // kill -9 instance 0: its orgs stay with it until its session times out, then move.
      const owned0 = orgs.filter((o) => o.sim.requests.filter((r) => r.at >= settled).at(-1)?.client === 'SSWS tok-0');
      expect(owned0.length).toBeGreaterThan(0);
      const killedAt = Date.now();
      const i0 = live[0]!.p;
      live[0] = null;
      await i0.kill('SIGKILL');
      await waitFor(
        () =>
          owned0
            .filter((o) => !o.sim.requests.some((r) => r.at > killedAt && r.client !== 'SSWS tok-0'))
            .map((o) => o.id),
        {
          until: (unpolled) => unpolled.length === 0,
          timeoutMs: 40_000,
          what: "the killed instance's orgs polled elsewhere",
        },
      );
      const killHandOverMs = Math.max(
        ...owned0.map((o) => o.sim.requests.find((r) => r.at > killedAt && r.client !== 'SSWS tok-0')!.at - killedAt),
      );

      // SIGTERM instance 1: it leaves the groups on the way out; the others take its orgs at once.
      const owned1 = orgs.filter(
        (o) => o.sim.requests.filter((r) => r.at > killedAt + 2_000).at(-1)?.client === 'SSWS tok-1',
      );
      const termAt = Date.now();
      const i1 = live[1]!.p;
      live[1] = null;
      await i1.kill('SIGTERM');
      const stoppedAt = Date.now();
      await waitFor(
        () =>
          owned1
            .filter((o) => !o.sim.requests.some((r) => r.at > stoppedAt && r.client !== 'SSWS tok-1'))
            .map((o) => o.id),
        {
          until: (unpolled) => unpolled.length === 0,
          timeoutMs: 30_000,
          what: "the stopped instance's orgs polled elsewhere",
        },
      );
      const termHandOverMs =
        owned1.length === 0
          ? 0
          : Math.max(
              ...owned1.map(
                (o) => o.sim.requests.find((r) => r.at > stoppedAt && r.client !== 'SSWS tok-1')!.at - stoppedAt,
              ),
            );
      expect(i1.output()).toContain('"msg":"hooklog stopped"');

      // ... and started again: it takes hooks at once and a share of the orgs after the rebalance.
      const restarted = start(1);
      const restartAt = Date.now();
      live[1] = { p: restarted, url: await restarted.address() };
      const listenMs = Date.now() - restartAt;
      await restarted.started();
      await waitFor(() => polling('tok-1', Date.now() - 1_000), {
        seen: () => ({
          'requests by the restarted instance': orgs.reduce(
            (count, o) => count + o.sim.requests.filter((r) => r.client === 'SSWS tok-1').length,
            0,
          ),
        }),
        timeoutMs: 30_000,
        what: 'the restarted instance polling',
      });
      await waitFor(() => deliveries, {
        until: (count) => count >= 120,
        timeoutMs: 60_000,
        what: 'deliveries after the restart',
      });
      console.log(
        `fleet: kill -9 hand-over ${killHandOverMs} ms (${owned0.length} orgs), SIGTERM hand-over ${termHandOverMs} ms (${owned1.length} orgs, stop took ${stoppedAt - termAt} ms), restarted instance listening after ${listenMs} ms`,
      );
      expect(killHandOverMs).toBeLessThanOrEqual(KILL_BOUND_MS);
      expect(termHandOverMs).toBeLessThanOrEqual(TERM_BOUND_MS);

      sending = false;
      await sender;
      clearInterval(arrivals);

      // Converged: every retained event of every org, and every acknowledged hook event, in ClickHouse.
      const expectPolled = orgs.reduce((k, o) => k + o.sim.retained(o.sim.logs).length, 0);
      await waitFor(
        async () => {
          const [row] = await sql(`SELECT count() AS n FROM events FINAL WHERE org != '${inst.org}'`);
          return Number(row!.n);
        },
        {
          until: (count) => count >= expectPolled,
          timeoutMs: 60_000,
          what: `${expectPolled} polled events in ClickHouse`,
        },
      );
      for (const o of orgs) {
        const rows = await sql(`SELECT uuid FROM events FINAL WHERE org = '${o.id}'`);
        const got = new Set(rows.map((r) => r.uuid));
        const want = o.sim.retained(o.sim.logs).map((e) => e.id);
        expect(rows.length, `${o.id}: rows FINAL`).toBe(want.length);
        expect(
          want.filter((u) => !got.has(u)),
          `${o.id}: missing`,
        ).toEqual([]);
      }
      await waitFor(
        async () => {
          const [row] = await sql(`SELECT count() AS n FROM events FINAL WHERE org = '${inst.org}'`);
          return Number(row!.n);
        },
        {
          until: (count) => count >= acked.size,
          timeoutMs: 30_000,
          what: `${acked.size} acknowledged hook events in ClickHouse`,
        },
      );
      const hookRows = new Set(
        (await sql(`SELECT uuid FROM events FINAL WHERE org = '${inst.org}'`)).map((r) => r.uuid),
      );
      expect([...acked.keys()].filter((u) => !hookRows.has(u))).toEqual([]);

      // Raw rows = records on the topic: the sink wrote each record once, whatever the rebalances.
      reader = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: 'fleet-reader', logger: silentLogger() });
      const logs = await Collector.start(reader, topics.logs);
      const cursors = await Collector.start(reader, topics.cursors);
      const alerts = await Collector.start(reader, `${topics.logs.replace(/\.logs$/, '')}.alerts`);
      const [raw] = await sql(`SELECT count() AS n FROM ${EVENTS_TABLE}`);
      await waitFor(() => logs.records.length, {
        until: (count) => count >= Number(raw!.n),
        timeoutMs: 30_000,
        what: 'the logs topic read',
      });
      expect(logs.records.length).toBe(Number(raw!.n));
      // The pollers appended every event once (hooks may repeat an event the service retried: folded by FINAL).
      const polledUuids = logs.records
        .filter((r) => r.headers['hooklog-source'] === 'system-log')
        .map((r) => JSON.parse(r.value.toString()).uuid as string);
      expect(duplicates(polledUuids)).toEqual([]);
      expect(cursorViolations(cursors.records)).toEqual([]);

      // No overlapping requests outside the hand-over bounds, no rate-limit violations.
      const bounds: Array<[number, number]> = [
        [killedAt, killedAt + KILL_BOUND_MS],
        [termAt, stoppedAt + TERM_BOUND_MS],
        [restartAt, restartAt + 30_000],
      ];
      const outside = overlaps(orgs, settled).filter((line) => {
        const at = Number(/@(\d+)$/.exec(line)![1]);
        return !bounds.some(([a, b]) => at >= a && at <= b);
      });
      expect(outside).toEqual([]);
      expect(orgs.flatMap((o) => o.sim.violations)).toEqual([]);

      // Alerts: one per acknowledged marked event, each once on the topic and once in the table.
      const marked = [...acked].filter(([, m]) => m).map(([u]) => u);
      await waitFor(
        () =>
          new Set(alerts.records.flatMap((r) => (JSON.parse(r.value.toString()) as { event_ids: string[] }).event_ids))
            .size,
        { until: (count) => count >= marked.length, timeoutMs: 30_000, what: `${marked.length} alerts` },
      );
      const ids = alerts.records.map((r) => r.headers['hooklog-alert-id']!);
      expect(duplicates(ids)).toEqual([]);
      const alerted = new Set(
        alerts.records.flatMap((r) => (JSON.parse(r.value.toString()) as { event_ids: string[] }).event_ids),
      );
      expect(marked.filter((u) => !alerted.has(u))).toEqual([]);
      await waitFor(async () => Number((await sql('SELECT count() AS n FROM alerts FINAL'))[0]!.n), {
        until: (v) => v >= ids.length,
        timeoutMs: 30_000,
        what: 'the alerts table',
      });
      expect(Number((await sql('SELECT count() AS n FROM alerts FINAL'))[0]!.n)).toBe(ids.length);
    } finally {
      sending = false;
      clearInterval(arrivals);
      await sender;
    }
  }, 300_000);
});
