/**
 * The rolling upgrade (issue 38, "Done when"): the previous release, built from git history at the commit
 * CHANGELOG.md names for it, runs as a fleet on one Kafka broker (three receivers+pollers instances and a sink into
 * embedded ClickHouse) under hook load and live polling; every instance is then rolled, one at a time (SIGTERM,
 * start this build on the same config), while the load goes on. Afterwards: 0 lost (every acknowledged hook event
 * and every retained polled event in ClickHouse), 0 extra (nothing that was not sent), 0 duplicated (one row per
 * event under FINAL, raw rows = records on the topic, each polled event appended once), no hook delivery refused
 * other than by a 503, and nothing dead-lettered (each release read the other's records).
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
import { HOOKLOG_VERSION } from '../../platform/release/release.js';
import { Collector, duplicates } from '../simulated-org/harness.js';
import { kafkaBrokerList, kafkaBrokers } from '../kafka/inject.js';
import { delivery } from '../fixtures/index.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { hookEvent, spawnHooklog, withOwnDataDir, type Instance } from '../support/instances.js';
import { buildPreviousRelease } from '../support/previous-release.js';
import { waitFor } from '../support/wait.js';
import { addLive, cursorViolations, orgsConfig, startOrgs, type FleetOrg } from './fleet.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const PARTITIONS = 3;

const all: Instance[] = [];
let orgs: FleetOrg[] = [];
let reader: Stream | undefined;
afterAll(async () => {
  if (process.env.FLEET_DEBUG)
    for (const i of all) writeFileSync(join(tmpdir(), `rolling-${i.name}-${i.child.pid}.log`), i.output());
  for (const i of all) await i.kill('SIGKILL');
  for (const o of orgs) await o.sim.stop();
  await reader?.close();
});

describe('a rolling upgrade from the previous release', () => {
  it('rolls every instance from the previous release to this one under load: 0 lost, 0 extra, 0 duplicated, only 503s', async () => {
    const previous = buildPreviousRelease();
    expect(previous.version).not.toBe(HOOKLOG_VERSION);
    orgs = await startOrgs(3, PARTITIONS, ['tok-0', 'tok-1', 'tok-2'], 200);
    const inst = writeTestConfig({ kafkaBrokers: kafkaBrokers() });
    const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
    writeFileSync(
      inst.configPath,
      stringify({
        ...base,
        stream: {
          ...base.stream,
          partitions: PARTITIONS,
          kafka: { ...(base.stream!.kafka as object), session_timeout_ms: 6_000 },
        },
        orgs: orgsConfig(orgs),
      }),
    );
    const topics = topicNames(base.stream!.topic_prefix as string);
    const sinkConfig = withOwnDataDir(inst.configPath, 'sink');
    const sinkDataDir = (parse(readFileSync(sinkConfig, 'utf8')) as { data_dir: string }).data_dir;
    const sql = async (q: string) => (await queryViaAdminSocket(sinkDataDir, q))!.rows as Array<Record<string, string>>;

    const roles = ['--roles', 'receivers,pollers'];
    const start = (i: number, release: 'old' | 'new') => {
      const p = spawnHooklog(
        `i${i}-${release}`,
        ['--config', inst.configPath, ...roles],
        { ORG_TOKEN: `tok-${i}` },
        release === 'old' ? { bin: previous.bin } : {},
      );
      all.push(p);
      return p;
    };
    const startSink = (release: 'old' | 'new') => {
      const p = spawnHooklog(
        `sink-${release}`,
        ['--config', sinkConfig, '--roles', 'sink'],
        { ORG_TOKEN: 'not-polling' },
        release === 'old' ? { bin: previous.bin } : {},
      );
      all.push(p);
      return p;
    };

    let sink = startSink('old');
    const live: Array<{ p: Instance; url: string } | null> = [null, null, null];
    for (let i = 0; i < 3; i++) {
      const p = start(i, 'old');
      live[i] = { p, url: await p.address() };
    }
    await Promise.all([sink.started(), ...live.map((l) => l!.p.started())]);

    // Hooks: round-robin over the live instances; a refused delivery is sent again to the next one, as the service
    // retries. Every answer is kept: only 204 and 503 may appear.
    const sent = new Set<string>();
    const acked = new Set<string>();
    const statuses = new Map<number, number>();
    let rr = 0;
    let deliveries = 0;
    let sending = true;
    const deliver = async () => {
      while (sending) {
        const events = Array.from({ length: 5 }, (_, k) => hookEvent(deliveries * 5 + k));
        events.forEach((e) => sent.add(e.uuid));
        const body = delivery(inst.org, inst.hookId, events);
        for (let attempt = 0; attempt < 3; attempt++) {
          const targets = live.filter((l): l is { p: Instance; url: string } => l !== null);
          const t = targets[rr++ % targets.length]!;
          const status = await postDelivery(t.url, inst.hookId, body).catch(() => 0);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status === 204) {
            events.forEach((e) => acked.add(e.uuid));
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
    const rolled: string[] = [];
    try {
      await waitFor(() => deliveries, { until: (c) => c >= 20, timeoutMs: 30_000, what: 'deliveries before the roll' });

      // Roll: a receiver first (the old sink reads the new release's records), then the sink (the new sink reads
      // the old instances' records and opens the database the old one migrated), then the other two.
      const rollInstance = async (i: number) => {
        const old = live[i]!.p;
        live[i] = null; // the load balancer takes it out before it stops
        await old.kill('SIGTERM');
        expect(old.output()).toContain('"msg":"hooklog stopped"');
        const p = start(i, 'new');
        live[i] = { p, url: await p.address() };
        await p.started();
        const at = deliveries;
        await waitFor(() => deliveries, {
          until: (c) => c >= at + 10,
          timeoutMs: 30_000,
          what: `deliveries after rolling i${i}`,
        });
        rolled.push(`i${i}`);
      };
      await rollInstance(0);
      await sink.kill('SIGTERM');
      expect(sink.output()).toContain('"msg":"hooklog stopped"');
      sink = startSink('new');
      await sink.started();
      rolled.push('sink');
      await rollInstance(1);
      await rollInstance(2);
      await waitFor(() => deliveries, { until: (c) => c >= 150, timeoutMs: 60_000, what: 'deliveries after the roll' });
    } finally {
      sending = false;
      clearInterval(arrivals);
      await sender;
    }
    expect(rolled).toEqual(['i0', 'sink', 'i1', 'i2']);
    console.log(
      `rolling upgrade ${previous.version} -> ${HOOKLOG_VERSION}: ${deliveries} deliveries (${sent.size} events, ${acked.size} acknowledged), answers ${JSON.stringify(Object.fromEntries(statuses))}`,
    );

    // Only 204 and 503 (a refusal the service retries): no other answer, no connection refused.
    expect([...statuses.keys()].filter((s) => s !== 204 && s !== 503)).toEqual([]);

    // 0 lost: every retained polled event and every acknowledged hook event, one row each.
    for (const o of orgs) {
      const want = o.sim.retained(o.sim.logs).map((e) => e.id);
      const rows = await waitFor(async () => sql(`SELECT uuid FROM events FINAL WHERE org = '${o.id}'`), {
        until: (r) => r.length >= want.length,
        timeoutMs: 60_000,
        what: `${want.length} polled events of ${o.id}`,
      });
      const got = new Set(rows.map((r) => r.uuid));
      expect(rows.length, `${o.id}: rows FINAL`).toBe(want.length);
      expect(
        want.filter((u) => !got.has(u)),
        `${o.id}: missing`,
      ).toEqual([]);
    }
    const hookRows = await waitFor(async () => sql(`SELECT uuid FROM events FINAL WHERE org = '${inst.org}'`), {
      until: (r) => r.length >= acked.size,
      timeoutMs: 60_000,
      what: `${acked.size} acknowledged hook events`,
    });
    const stored = new Set(hookRows.map((r) => r.uuid!));
    expect(
      [...acked].filter((u) => !stored.has(u)),
      'acknowledged, missing',
    ).toEqual([]);
    // 0 extra: nothing stored that was not sent (a 503'd delivery may have been stored: it was sent).
    expect(
      [...stored].filter((u) => !sent.has(u)),
      'stored, never sent',
    ).toEqual([]);
    expect(stored.size, 'one row per hook event').toBe(hookRows.length);

    // 0 duplicated on the way: raw rows = records on the topic, each polled event appended once, cursors forward.
    reader = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: 'rolling-reader', logger: silentLogger() });
    const logs = await Collector.start(reader, topics.logs);
    const cursors = await Collector.start(reader, topics.cursors);
    const [raw] = await sql(`SELECT count() AS n FROM ${EVENTS_TABLE}`);
    await waitFor(() => logs.records.length, {
      until: (c) => c >= Number(raw!.n),
      timeoutMs: 30_000,
      what: 'the logs topic read',
    });
    expect(logs.records.length).toBe(Number(raw!.n));
    const polledUuids = logs.records
      .filter((r) => r.headers['hooklog-source'] === 'system-log')
      .map((r) => JSON.parse(r.value.toString()).uuid as string);
    expect(duplicates(polledUuids)).toEqual([]);
    expect(cursorViolations(cursors.records)).toEqual([]);
    // Both releases wrote: records without the format header (the previous release's) and with it (this one's).
    expect(logs.records.some((r) => r.headers['hooklog-format'] === undefined)).toBe(true);
    expect(logs.records.some((r) => r.headers['hooklog-format'] === '1')).toBe(true);
    // Each release read the other's records: nothing dead-lettered.
    expect(Number((await sql('SELECT count() AS n FROM deadletter'))[0]!.n)).toBe(0);
    expect(orgs.flatMap((o) => o.sim.violations)).toEqual([]);
  }, 600_000);
});
