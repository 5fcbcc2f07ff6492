/**
 * The pollers end to end, shared by the embedded and the Kafka runs: the real
 * CLI in a child process polling the simulated org (in this test process)
 * with 50,000 System Log events over 100 days and legacy events, live
 * arrivals, injected faults, and `kill -9` at random points while a page is
 * in flight. Afterwards every event inside the retention window must be in
 * ClickHouse exactly once, and the org must have seen zero rule violations.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { silentLogger } from '../../platform/log.js';
import { topicNames } from '../../platform/stream/headers.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { Collector, duplicates } from '../simulated-org/harness.js';
import { history, legacyEvent, logEvent, SimulatedOrg, type RequestRecord } from '../simulated-org/index.js';
import { startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';

const DAY = 86_400_000;
/** Kills that land while a page is in flight. */
const KILLS = 5;

export function describePollers(mode: string, brokers: () => string | undefined): void {
  describe(`pollers end to end (${mode})`, () => {
    let sim: SimulatedOrg | undefined;
    let daemon: Daemon | undefined;
    let live: NodeJS.Timeout | undefined;
    afterAll(async () => {
      clearInterval(live);
      if (daemon) await stopDaemon(daemon);
      await sim?.stop();
    });

    it(`50,000 events over 100 days plus live arrivals reach ClickHouse exactly once across ${KILLS} kill -9 mid-page, with faults`, async () => {
      sim = await SimulatedOrg.start({
        rateLimit: { logs: { limit: 40, windowMs: 1000 }, events: { limit: 20, windowMs: 1000 } },
      });
      const now = Date.now();
      const boundary: [number, number] = [now - 90 * DAY - 3_600_000, now - 90 * DAY + 3_600_000];
      sim.addLogEvents(history({ count: 50_000, days: 100, now, kind: 'log', exclude: [boundary], seed: 1 }));
      sim.addLegacyEvents(history({ count: 3_000, days: 100, now, kind: 'legacy', exclude: [boundary], seed: 2 }));
      expect(sim.logs.length).toBeGreaterThan(49_000);
      sim.faults.random(
        0.08,
        [
          { kind: 'status', status: 500, errorCode: 'E0000009' },
          { kind: 'status', status: 503, errorCode: 'E0000010' },
          { kind: 'drop' },
          { kind: 'truncate' },
          { kind: 'slow', ms: 150 },
        ],
        11,
      );
      const org = `sim-${Math.random().toString(36).slice(2, 8)}`;
      const section = { start: '100d', poll_interval_ms: 150, rate_limit_share: 0.5 };
      const b = brokers();
      const inst = writeTestConfig({
        ...(b ? { kafkaBrokers: b } : {}),
        extra: {
          sink: { group: `sink-${org}`, max_batch_wait_ms: 200 },
          orgs: [
            {
              id: org,
              base_url: sim.url,
              auth: { ssws: { token: 'sim-token' } },
              request_timeout_ms: 5_000,
              system_log: section,
              legacy_events: { enabled: true, ...section },
            },
          ],
        },
      });
      const dataDir = (parse(readFileSync(inst.configPath, 'utf8')) as { data_dir: string }).data_dir;
      // Kafka only: a killed consumer stays in its group until its session times out, and a restarted hooklog
      // waits for that before it listens. The sink's own restart is tested with the stream; here each life takes a
      // fresh sink group (reading from the beginning, duplicates folded), so kills cost seconds. The pollers' state
      // (cursors topic, transactional id, group) is the same across lives, as in production: each restart waits
      // for the killed member's eviction there, after the broker's least session time-out (6 s; the default is 10).
      const freshSinkGroup = (life: number) => {
        if (!b) return;
        const cfg = parse(readFileSync(inst.configPath, 'utf8')) as {
          sink: { group: string };
          stream: { kafka: Record<string, unknown> };
        };
        cfg.sink.group = `sink-${org}-${life}`;
        cfg.stream.kafka.session_timeout_ms = 6_000;
        writeFileSync(inst.configPath, stringify(cfg));
      };

      let n = 0;
      live = setInterval(() => {
        const t = Date.now();
        sim!.addLogEvents(
          Array.from({ length: 5 }, (_, i) => ({ event: logEvent(n++), published: t - ((n + i) % 7) * 400 })),
        );
        if (n % 20 === 0) sim!.addLegacyEvents([{ event: legacyEvent(n), published: t - 300 }]);
      }, 100);

      // Each life ends with a kill while a System Log page is in flight: either during its transfer (0-40 ms
      // after the k-th request arrived) or while hooklog parses and stores it (0-20 ms after the reply ended).
      // A kill counts as mid-page when hooklog had not yet asked for the following page.
      const kills: Array<{ life: number; phase: string; delayMs: number; midPage: boolean }> = [];
      for (let life = 0; kills.filter((x) => x.midPage).length < KILLS; life++) {
        expect(life).toBeLessThan(3 * KILLS);
        const from = sim.requests.length;
        freshSinkGroup(life);
        daemon = await startDaemon(['--config', inst.configPath]);
        const pages = () => sim!.requests.slice(from).filter((r) => r.path === '/api/v1/logs');
        const k = 1 + Math.floor(Math.random() * 3);
        const phase = life % 2 === 0 ? 'transfer' : 'processing';
        const trigger = await waitFor(
          () => {
            const r = pages()[k - 1];
            return r && (phase === 'transfer' || r.doneAt !== undefined) ? r : undefined;
          },
          {
            what: `page request ${k}`,
            seen: () => `${pages().length} page requests`,
            timeoutMs: 30_000,
            intervalMs: 2,
          },
        );
        const delayMs = Math.floor(Math.random() * (phase === 'transfer' ? 40 : 20));
        await new Promise((r) => setTimeout(r, delayMs));
        const midPage = trigger.doneAt === undefined || pages().indexOf(trigger) === pages().length - 1;
        daemon.child.kill('SIGKILL');
        await new Promise((r) => daemon!.child.once('exit', r));
        kills.push({ life, phase, delayMs, midPage });
      }
      freshSinkGroup(KILLS * 3);
      daemon = await startDaemon(['--config', inst.configPath]);
      const count = async (sql: string) => Number((await queryViaAdminSocket(dataDir, sql))?.rows[0]?.n ?? -1);
      // Catch up under live arrivals first, then stop them and wait for the tail.
      await waitFor(async () => await count(`SELECT uniqExact(uuid) AS n FROM events WHERE org = '${org}'`), {
        until: (polled) => polled >= 45_000,
        what: 'catch-up',
        timeoutMs: 120_000,
        intervalMs: 500,
      });
      clearInterval(live);
      const logs = sim.retained(sim.logs);
      const legacy = sim.retained(sim.legacy);
      // Distinct keys, not FINAL: `events` may be a table or (from migration 005) a view that is FINAL itself.
      await waitFor(
        async () => ({
          events: await count(`SELECT uniqExact(uuid) AS n FROM events WHERE org = '${org}'`),
          legacy: await count(`SELECT uniqExact(event_id) AS n FROM legacy_events WHERE org = '${org}'`),
        }),
        {
          until: (c) => c.events === logs.length && c.legacy === legacy.length,
          what: `${logs.length} events and ${legacy.length} legacy events`,
          timeoutMs: 60_000,
          intervalMs: 500,
        },
      );

      const rows = (await queryViaAdminSocket(
        dataDir,
        `SELECT uuid, any(source) AS s FROM events WHERE org = '${org}' GROUP BY uuid`,
      ))!.rows;
      expect(new Set(rows.map((r) => String(r.uuid)))).toEqual(new Set(logs.map((e) => e.id)));
      expect(rows.every((r) => r.s === 'system-log')).toBe(true);
      const legacyIds = (await queryViaAdminSocket(
        dataDir,
        `SELECT DISTINCT event_id FROM legacy_events WHERE org = '${org}'`,
      ))!.rows.map((r) => String(r.event_id));
      expect(new Set(legacyIds)).toEqual(new Set(legacy.map((e) => e.id)));
      expect(await count(`SELECT count() AS n FROM deadletter WHERE org = '${org}'`)).toBe(0);
      // Outside retention: never returned, never stored.
      expect(
        await count(`SELECT count() AS n FROM events WHERE org = '${org}' AND published < now64(3) - INTERVAL 90 DAY`),
      ).toBe(0);

      // ClickHouse folds duplicates (FINAL), so look one level down too: the stream itself holds each
      // polled event exactly once — no page stored twice, none half-stored, whatever the kills hit.
      await stopDaemon(daemon);
      daemon = undefined;
      const stream = b
        ? await openKafkaStream({ brokers: b.split(','), clientId: `check-${org}`, logger: silentLogger() })
        : await openEmbeddedStream({ dataDir });
      try {
        const prefix = (parse(readFileSync(inst.configPath, 'utf8')) as { stream: { topic_prefix: string } }).stream
          .topic_prefix;
        const collector = await Collector.start(stream, topicNames(prefix).logs);
        await waitFor(() => collector.records.length, {
          until: (polled) => polled >= logs.length,
          what: 'the logs topic read back',
          timeoutMs: 60_000,
        });
        await collector.stop();
        const onStream = collector.ids('uuid');
        expect(onStream).toHaveLength(logs.length);
        expect(duplicates(onStream)).toEqual([]);
      } finally {
        await stream.close();
      }

      expect(sim.violations).toEqual([]);
      expect(sim.breaches).toEqual([]);
      expect(sim.faults.total).toBeGreaterThan(0);
      const pages = sim.requests.filter((r: RequestRecord) => r.path === '/api/v1/logs');
      process.stderr.write(
        `pollers ${mode}: ${pages.length} System Log requests, faults ${JSON.stringify(Object.fromEntries(sim.faults.injected))}, kills ${JSON.stringify(kills)}\n`,
      );
    }, 400_000);
  });
}
