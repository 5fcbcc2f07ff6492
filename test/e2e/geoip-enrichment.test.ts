/**
 * GeoIP enrichment as `hooklog start` runs it (issue 39), on the shared Kafka broker and embedded ClickHouse,
 * with City and ASN databases generated here (test/support/mmdb.ts): an event hook delivery's events are looked
 * up once on append; one without a location gets the database's country, city, coordinates and AS in the events
 * table and fires a rule on `enrichment.asn.number`; one with its own location keeps it (and gets only the AS);
 * the stored event bytes are the delivered ones; a replaced database answers for later events, and a corrupt
 * one keeps the last good database and is counted.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { startHooklog, type Running } from '../../cli/runtime.js';
import { silentLogger } from '../../platform/log.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import type { Alert } from '../../consumers/alerting/alert.js';
import { backtest } from '../../consumers/alerting/backtest.js';
import { compileRule } from '../../consumers/alerting/rules/compile.js';
import { delivery } from '../fixtures/index.js';
import { kafkaBrokerList } from '../kafka/inject.js';
import { TEST_SECRET, postDelivery } from '../support/hooklog-config.js';
import { total } from '../support/metrics.js';
import { asnRecord, cityRecord, writeMmdb } from '../support/mmdb.js';
import { randomName, waitFor } from '../support/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-geoip-e2e-'));
let running: Running | undefined;
afterAll(async () => {
  await running?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Replaces `path` by rename, as a download script does. */
function put(path: string, buf: Buffer): void {
  writeFileSync(`${path}.tmp`, buf);
  renameSync(`${path}.tmp`, path);
}

// Recent: the events table keeps days within its retention only.
const T0 = Date.now() - 3_600_000;
let seq = 0;
function signIn(ip: string, own?: Record<string, unknown>) {
  const i = seq++;
  return {
    uuid: randomUUID(),
    published: new Date(T0 + i * 1000).toISOString(),
    eventType: 'user.session.start',
    version: '0',
    outcome: { result: 'SUCCESS' },
    actor: { id: '00u1', type: 'User', alternateId: 'alice@example.com' },
    client: { ipAddress: ip, ...(own ? { geographicalContext: own } : {}) },
  };
}

interface Row {
  uuid: string;
  geo_country: string | null;
  geo_city: string | null;
  enrichment_country: string | null;
  enrichment_city: string | null;
  enrichment_lat: number | null;
  enrichment_lon: number | null;
  enrichment_as_number: number | null;
  enrichment_as_org: string | null;
  raw: string;
}

async function metrics(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

describe('GeoIP enrichment in the running process', () => {
  it('enriches each event once on append: ClickHouse columns and rules agree; reloads follow the files', async () => {
    const city = join(dir, 'City.mmdb');
    const asn = join(dir, 'ASN.mmdb');
    put(
      city,
      writeMmdb('GeoLite2-City', [{ cidr: '198.51.100.0/24', data: cityRecord('FR', 'Paris', 48.8566, 2.3522) }]),
    );
    put(asn, writeMmdb('GeoLite2-ASN', [{ cidr: '198.51.100.0/24', data: asnRecord(64500, 'Example Transit') }]));
    const db = randomName('geo');
    const org = 'acme';
    const config = parseConfig(
      {
        data_dir: join(dir, 'data'),
        server: { host: '127.0.0.1', port: 0 },
        stream: {
          topic_prefix: randomName('geo'),
          partitions: 1,
          kafka: { brokers: kafkaBrokerList(), client_id: randomName('geo') },
        },
        store: { database: db },
        sink: { group: randomName('sink'), max_batch_wait_ms: 50 },
        event_hooks: [{ id: 'h', org, auth: { header: 'authorization', secrets: [TEST_SECRET] } }],
        enrichment: { geoip: { city, asn }, reload_interval_ms: 100 },
        alerting: {
          rules: [{ id: 'geo.transit', severity: 'high', detection: 'enrichment.asn.number eq 64500' }],
          max_batch_wait_ms: 20,
        },
      },
      {},
    );
    running = await startHooklog(config, silentLogger());
    const store = running.store!;
    const alerts: Alert[] = [];
    const reader = await running.stream.consume({
      topic: `${config.stream.topic_prefix}.alerts`,
      group: randomName('alerts-reader'),
      maxBatchWaitMs: 20,
      handler: async (b: { records: readonly ConsumedRecord[] }) =>
        void alerts.push(...b.records.map((r) => JSON.parse(r.value.toString()) as Alert)),
    });
    try {
      const bare = signIn('198.51.100.7');
      const located = signIn('198.51.100.8', { country: 'Germany', city: 'Berlin' });
      const unknown = signIn('192.0.2.1');
      expect(await postDelivery(running.url, 'h', delivery(org, 'h', [bare, located, unknown]))).toBe(204);

      const rows = async (uuids: string[]) =>
        store.query<Row>(
          `SELECT uuid, geo_country, geo_city, enrichment_country, enrichment_city, enrichment_lat, enrichment_lon,
                  enrichment_as_number, enrichment_as_org, raw
           FROM ${db}.events WHERE uuid IN {u:Array(String)} ORDER BY uuid`,
          { u: uuids },
        );
      const got = await waitFor(() => rows([bare.uuid, located.uuid, unknown.uuid]), {
        until: (r) => r.length === 3,
        what: 'the three events in ClickHouse',
        timeoutMs: 60_000,
      });
      const by = new Map(got.map((r) => [r.uuid, r]));
      const shown = (r: Row) => {
        const { uuid: _u, raw: _r, ...rest } = r;
        return rest;
      };
      expect(shown(by.get(bare.uuid)!)).toEqual({
        geo_country: null,
        geo_city: null,
        enrichment_country: 'FR',
        enrichment_city: 'Paris',
        enrichment_lat: 48.8566,
        enrichment_lon: 2.3522,
        enrichment_as_number: 64500,
        enrichment_as_org: 'Example Transit',
      });
      // Its own location wins: no looked-up geo; the AS, which it does not name, is added.
      expect(shown(by.get(located.uuid)!)).toEqual({
        geo_country: 'Germany',
        geo_city: 'Berlin',
        enrichment_country: null,
        enrichment_city: null,
        enrichment_lat: null,
        enrichment_lon: null,
        enrichment_as_number: 64500,
        enrichment_as_org: 'Example Transit',
      });
      expect(Object.values(shown(by.get(unknown.uuid)!)).every((v) => v === null)).toBe(true);
      // The event's bytes are the delivered ones: the enrichment travels beside them, never inside.
      expect(JSON.parse(by.get(bare.uuid)!.raw)).toEqual(bare);

      // The rule saw what ClickHouse stored: both events of AS 64500, not the one outside the database.
      await waitFor(async () => alerts.length, { until: (n) => n >= 2, what: 'alerts on enrichment.asn.number' });
      expect(alerts.flatMap((a) => a.event_ids).sort()).toEqual([bare.uuid, located.uuid].sort());
      // A backtest over the stored events reads the enrichment back from the columns: the same two.
      const replay = await backtest(
        store,
        [compileRule({ id: 'geo.transit', detection: 'enrichment.asn.number eq 64500' })],
        { since: T0 - 60_000, until: Date.now() + 60_000, allowedLatenessMs: 0, sample: 10 },
      );
      expect(replay.perRule[0]!.first.flatMap((a) => a.event_ids).sort()).toEqual([bare.uuid, located.uuid].sort());

      // A replaced City database answers for the events after it is read.
      const before = total(await metrics(running.url), 'hooklog_geoip_reloads_total', { database: 'city' });
      put(city, writeMmdb('GeoLite2-City', [{ cidr: '198.51.100.0/24', data: cityRecord('IT', 'Rome', 41.9, 12.5) }]));
      await waitFor(
        async () => total(await metrics(running!.url), 'hooklog_geoip_reloads_total', { database: 'city' }),
        {
          until: (n) => n > before,
          what: 'the replaced City database reloaded',
        },
      );
      const later = signIn('198.51.100.9');
      expect(await postDelivery(running.url, 'h', delivery(org, 'h', [later]))).toBe(204);
      const [rome] = await waitFor(() => rows([later.uuid]), { until: (r) => r.length === 1, what: 'the later event' });
      expect([rome!.enrichment_country, rome!.enrichment_city]).toEqual(['IT', 'Rome']);

      // A corrupt file: counted, and the last good database (Rome) keeps answering.
      const errorsBefore = total(await metrics(running.url), 'hooklog_geoip_reload_errors_total', { database: 'city' });
      put(city, Buffer.from('<html>rate limited</html>'));
      await waitFor(
        async () => total(await metrics(running!.url), 'hooklog_geoip_reload_errors_total', { database: 'city' }),
        { until: (n) => n === errorsBefore + 1, what: 'the corrupt City database counted' },
      );
      const last = signIn('198.51.100.10');
      expect(await postDelivery(running.url, 'h', delivery(org, 'h', [last]))).toBe(204);
      const [kept] = await waitFor(() => rows([last.uuid]), { until: (r) => r.length === 1, what: 'the last event' });
      expect([kept!.enrichment_country, kept!.enrichment_city]).toEqual(['IT', 'Rome']);
    } finally {
      await reader.stop();
    }
  }, 180_000);
});
