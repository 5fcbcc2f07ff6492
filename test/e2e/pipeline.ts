/**
 * The end-to-end scenarios of the foundation, shared by the embedded and the
 * Kafka runs: the real CLI in child processes, deliveries over HTTP, results
 * read back through `hooklog sql`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delivery, validLogEvents } from '../fixtures/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { postDelivery, storeRows, TEST_SECRET, writeTestConfig, type TestInstance } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';

const rowsViaSocket = (inst: TestInstance, sql: string) => storeRows(inst.configPath, sql);

export function describePipeline(mode: string, brokers: () => string | undefined): void {
  describe(`pipeline end to end (${mode})`, () => {
    let inst: TestInstance;
    let daemon: Daemon;
    const events = validLogEvents();

    beforeAll(async () => {
      const b = brokers();
      inst = writeTestConfig(b ? { kafkaBrokers: b } : {});
      daemon = await startDaemon(['--config', inst.configPath]);
    }, 120_000);
    afterAll(async () => {
      if (daemon) await stopDaemon(daemon);
    });

    it('answers the verification challenge, and refuses a wrong secret without saying why', async () => {
      const url = `${daemon.url}/hooks/events/${inst.hookId}`;
      const ok = await fetch(url, {
        headers: { authorization: TEST_SECRET, 'x-okta-verification-challenge': 'chal-42' },
      });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await ok.json()).toEqual({ verification: 'chal-42' });
      const bad = await fetch(url, {
        headers: { authorization: 'wrong-secret-0123456789', 'x-okta-verification-challenge': 'x' },
      });
      const unknownHook = await fetch(`${daemon.url}/hooks/events/nope`, {
        headers: { authorization: TEST_SECRET, 'x-okta-verification-challenge': 'x' },
      });
      expect(bad.status).toBe(401);
      expect(unknownHook.status).toBe(401);
      expect(await bad.text()).toBe(await unknownHook.text());
    });

    it('makes 50 delivered events visible through hooklog sql within 2 s, raw JSON deep-equal', async () => {
      const sent = events.slice(0, 50);
      expect(await postDelivery(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, sent))).toBe(204);
      const acked = Date.now();
      await waitFor(
        async () =>
          (await rowsViaSocket(inst, `SELECT count() AS n FROM events FINAL WHERE org = '${inst.org}'`))[0]?.n,
        { until: (v) => v === '50', timeoutMs: 2000, intervalMs: 50, what: '50 rows within 2 s of the 204' },
      );
      const visibleAfterMs = Date.now() - acked;
      const res = await runCli([
        '--config',
        inst.configPath,
        'sql',
        `SELECT uuid, raw, source FROM events FINAL WHERE org = '${inst.org}' ORDER BY uuid`,
        '--format',
        'json',
      ]);
      expect(res.stderr).toBe('');
      expect(res.code).toBe(0);
      const rows = JSON.parse(res.stdout) as Array<{ uuid: string; raw: string; source: string }>;
      expect(rows).toHaveLength(50);
      const byUuid = new Map(sent.map((e) => [e.uuid, e]));
      for (const row of rows) {
        expect(JSON.parse(row.raw)).toEqual(byUuid.get(row.uuid));
        expect(row.source).toBe('hook');
      }
      expect(visibleAfterMs).toBeLessThan(2000);
    });

    it('keeps one row per uuid when a delivery is repeated and an event arrives in two deliveries', async () => {
      const batch = events.slice(50, 60);
      const d = delivery(inst.org, inst.hookId, batch);
      expect(await postDelivery(daemon.url, inst.hookId, d)).toBe(204);
      expect(await postDelivery(daemon.url, inst.hookId, d)).toBe(204);
      expect(await postDelivery(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, [batch[0], events[60]]))).toBe(
        204,
      );
      const uuids = [...batch, events[60]!].map((e) => `'${e.uuid}'`).join(',');
      const rows = await waitFor(
        async () => {
          const r = await rowsViaSocket(
            inst,
            `SELECT uuid, count() AS n FROM events FINAL WHERE org = '${inst.org}' AND uuid IN (${uuids}) GROUP BY uuid`,
          );
          return r;
        },
        { until: (found) => found.length === 11, what: '11 uuids' },
      );
      expect(rows.every((r) => r.n === '1')).toBe(true);
    });

    it('dead-letters the invalid events of a mixed batch and still acknowledges the valid ones', async () => {
      const good = events[70]!;
      const bad = { published: '2026-01-01T00:00:00Z', eventType: 'user.session.start', note: 'no uuid' };
      expect(await postDelivery(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, [good, bad]))).toBe(204);
      await waitFor(
        async () =>
          (await rowsViaSocket(inst, `SELECT count() AS n FROM events FINAL WHERE uuid = '${good.uuid}'`))[0]?.n,
        { until: (v) => v === '1', what: 'good event' },
      );
      const dl = await waitFor(
        async () => {
          const r = await rowsViaSocket(inst, `SELECT reason, origin, raw FROM deadletter WHERE org = '${inst.org}'`);
          return r;
        },
        { until: (rows) => rows.length > 0, what: 'dead letter row' },
      );
      expect(JSON.parse(String(dl[0]!.raw))).toEqual(bad);
      expect(String(dl[0]!.reason)).toMatch(/uuid/);
      expect(dl[0]!.origin).toBe('event-hook');
    });
  });
}
