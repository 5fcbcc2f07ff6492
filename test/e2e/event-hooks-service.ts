/**
 * Done-when 1 of issue 3, shared by the embedded and the Kafka run: the real
 * CLI is driven the way the identity service drives a hook (verification
 * first, then batched deliveries with a 3 s time-out and one retry on 5xx or
 * time-out, with the service's own duplicates), using the project's LogEvent fixtures; every
 * acknowledged event must then be in ClickHouse exactly once, its raw JSON
 * deep-equal to what was sent, with the delivery's metadata beside it.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { delivery, validLogEvents } from '../fixtures/index.js';
import { TEST_SECRET, writeTestConfig, type TestInstance } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';
import { sample } from '../../receivers/event-hooks/testing.js';
import { ServiceClient, type DeliveryResult } from './event-hooks-client.js';

export async function sqlRows(
  inst: TestInstance,
  sql: string,
): Promise<ReadonlyArray<Readonly<Record<string, unknown>>>> {
  const dataDir = (parse(readFileSync(inst.configPath, 'utf8')) as { data_dir: string }).data_dir;
  const rs = await queryViaAdminSocket(dataDir, sql);
  if (!rs) throw new Error('no running hooklog on the admin socket');
  return rs.rows;
}

/**
 * Deliveries with the service's quirks, as raw bytes: the first spells the id `eventID` (older docs)
 * and carries an event also sent elsewhere; the next four share one eventId (one spelled `eventID`),
 * their copies of its one new event differing by a field, as copies across doc versions do.
 */
export function quirkDeliveries(
  org: string,
  hookId: string,
  events: ReadonlyArray<Record<string, unknown> & { uuid: string }>,
): Array<{
  raw: Buffer;
  json: { eventId?: string; eventID?: string; data: { events: Array<Record<string, unknown> & { uuid: string }> } };
}> {
  const spellEventID = (d: ReturnType<typeof delivery>) => {
    const { eventId, ...rest } = d;
    return { ...rest, eventID: eventId };
  };
  const fresh = { ...events[7]!, uuid: '6f1c2d3e-4b5a-4c6d-9e8f-0a1b2c3d4e5f', displayMessage: 'User login to Okta' };
  const sharedId = 'quirk-shared-delivery-id';
  const bodies = [
    spellEventID(delivery(org, hookId, [events[5]!], 'quirk-eventID-delivery')),
    delivery(org, hookId, [fresh], sharedId),
    delivery(org, hookId, [{ ...fresh, severity: 'WARN' }], sharedId),
    spellEventID(delivery(org, hookId, [{ ...fresh, version: '1' }], sharedId)),
    delivery(org, hookId, [{ ...fresh, displayMessage: 'User login' }], sharedId),
  ];
  return bodies.map((b) => {
    const raw = Buffer.from(JSON.stringify(b, null, 2));
    return { raw, json: JSON.parse(raw.toString()) };
  });
}

/** Runs `jobs` with at most `n` at a time, in order of start. */
export async function pool<T>(n: number, jobs: Array<() => Promise<T>>): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]!();
      }
    }),
  );
  return out;
}

export function describeServiceDrive(mode: string, brokers: () => string | undefined): void {
  describe(`event hooks driven like the service (${mode})`, () => {
    let inst: TestInstance;
    let daemon: Daemon;
    let client: ServiceClient;

    beforeAll(async () => {
      const b = brokers();
      inst = writeTestConfig(b ? { kafkaBrokers: b } : {});
      daemon = await startDaemon(['--config', inst.configPath]);
      client = new ServiceClient({
        baseUrl: daemon.url,
        hookId: inst.hookId,
        header: 'authorization',
        secret: TEST_SECRET,
      });
    }, 120_000);
    afterAll(async () => {
      if (daemon) await stopDaemon(daemon);
    });

    it('verifies, takes every fixture event in batched, retried and repeated deliveries, and stores each acknowledged event once, raw JSON deep-equal', async () => {
      const verification = await client.verify('fixture-challenge-7');
      expect(verification).toEqual({
        status: 200,
        contentType: expect.stringMatching(/^application\/json/),
        body: { verification: 'fixture-challenge-7' },
      });

      // 128 events in deliveries of 1 to 50, as the service batches events that happen close together.
      const events = validLogEvents();
      const sizes = [1, 5, 10, 25, 50, 36];
      const batches: Array<{ id: string; events: typeof events }> = [];
      for (let i = 0, s = 0; i < events.length; s++) {
        const n = sizes[s % sizes.length]!;
        batches.push({ id: crypto.randomUUID(), events: events.slice(i, i + n) });
        i += n;
      }
      const jobs: Array<() => Promise<{ sent: typeof events; deliveryId: string; result: DeliveryResult }>> =
        batches.map((b) => async () => ({
          sent: b.events,
          deliveryId: b.id,
          result: await client.deliver(delivery(inst.org, inst.hookId, b.events, b.id)),
        }));
      // The service's own duplicates: a delivery sent again (same eventId), and the same events in a new delivery.
      jobs.push(async () => ({
        sent: batches[2]!.events,
        deliveryId: batches[2]!.id,
        result: await client.deliver(delivery(inst.org, inst.hookId, batches[2]!.events, batches[2]!.id)),
      }));
      const redeliveryId = crypto.randomUUID();
      jobs.push(async () => ({
        sent: batches[3]!.events,
        deliveryId: redeliveryId,
        result: await client.deliver(delivery(inst.org, inst.hookId, batches[3]!.events, redeliveryId)),
      }));
      const results = await pool(3, jobs);
      // Then deliveries with the service's quirks, byte for byte and in order: two spell the id eventID, and
      // four share one eventId (their copies of its one event differ by a field across doc versions), so the
      // first is appended and the other three are acknowledged as repeats without appending.
      for (const c of quirkDeliveries(inst.org, inst.hookId, events)) {
        results.push({
          sent: c.json.data.events,
          deliveryId: (c.json.eventId ?? c.json.eventID)!,
          result: await client.deliver(c.raw),
        });
      }

      for (const r of results) expect(r.result.final, JSON.stringify(r.result.attempts)).toBe(204);
      const acked = new Map<string, { event: Record<string, unknown>; deliveryIds: Set<string> }>();
      const seenDeliveries = new Set<string>();
      for (const r of results) {
        const repeat = seenDeliveries.has(r.deliveryId);
        seenDeliveries.add(r.deliveryId);
        for (const e of r.sent) {
          const entry = acked.get(e.uuid) ?? { event: e, deliveryIds: new Set<string>() };
          if (!repeat) {
            expect(e, 'a uuid in two different deliveries is the same event').toEqual(entry.event);
            entry.deliveryIds.add(r.deliveryId);
          }
          acked.set(e.uuid, entry);
        }
      }
      // One quirk delivery carries an event that is also in logevents.valid.jsonl; the other is new.
      expect(acked.size).toBe(events.length + 1);

      const rows = await waitFor(
        async () => {
          const r = await sqlRows(
            inst,
            `SELECT uuid, raw, source, hook_id, delivery_id, toString(received_at) AS received_at, count() OVER (PARTITION BY uuid) AS copies FROM events FINAL WHERE org = '${inst.org}'`,
          );
          return r;
        },
        { until: (found) => found.length >= acked.size, timeoutMs: 30_000, what: `${acked.size} events in ClickHouse` },
      );
      expect(rows).toHaveLength(acked.size);
      for (const row of rows) {
        const sent = acked.get(String(row.uuid));
        expect(sent, String(row.uuid)).toBeDefined();
        expect(JSON.parse(String(row.raw))).toEqual(sent!.event);
        expect(row.copies).toBe('1');
        expect(row).toMatchObject({ source: 'hook', hook_id: inst.hookId });
        expect(sent!.deliveryIds.has(String(row.delivery_id))).toBe(true);
        expect(Date.parse(`${String(row.received_at).replace(' ', 'T')}Z`)).toBeGreaterThan(Date.now() - 600_000);
      }
      // Repeated deliveries were acknowledged without appending: the repeated batch and three quirk copies.
      const exposition = await (await fetch(`${daemon.url}/metrics`)).text();
      expect(sample(exposition, 'hooklog_event_hook_events_total', { hook: inst.hookId, outcome: 'duplicate' })).toBe(
        batches[2]!.events.length + 3,
      );
      expect(sample(exposition, 'hooklog_event_hook_events_total', { hook: inst.hookId, outcome: 'appended' })).toBe(
        events.length + batches[3]!.events.length + 2,
      );
      // Nothing was dead-lettered: every event here is one the service could send.
      expect(await sqlRows(inst, `SELECT count() AS n FROM deadletter WHERE org = '${inst.org}'`)).toEqual([
        { n: '0' },
      ]);
    });
  });
}
