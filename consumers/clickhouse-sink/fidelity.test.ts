/**
 * Counted once per (org, uuid), with events the project generates: the
 * mapping lower-cases uuids (raw kept as received) and falls back to
 * request.ipChain for the client IP; a hook copy and a poller copy of one
 * event fold into one row; migration 008 re-keys rows written before with
 * upper-case uuids and keeps every one of them.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/support/random.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { silentLogger } from '../../platform/log.js';
import { defaultMigrationsDir, loadMigrations, migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import type { ConsumedRecord, StreamRecord } from '../../platform/stream/types.js';
import { event, uuid } from './crash-replay.fixture.js';
import { startClickHouseSink } from './index.js';
import { mapEventRecord, type EventRow } from './rows.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-fidelity-'));
const rand = seededRandom(4);
let store: Store;
let stream: EmbeddedStream;

beforeAll(async () => {
  store = openStore({ database: randomName('fidelity'), dataDir, logger: log });
  stream = await openEmbeddedStream({ dataDir, logger: log });
}, 60_000);

afterAll(async () => {
  await stream?.close();
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

type Ev = Record<string, unknown> & { uuid: string; client: Record<string, unknown> };
const parse = (r: StreamRecord) => JSON.parse(r.value.toString()) as Ev;
const asRecord = (e: object, org: string, source: string): StreamRecord => ({
  key: org,
  value: Buffer.from(JSON.stringify(e)),
  headers: { [Header.org]: org, [Header.source]: source },
});
function row(e: object): EventRow {
  const rec: ConsumedRecord = {
    topic: 't',
    partition: 0,
    offset: 0,
    key: null,
    value: Buffer.from(JSON.stringify(e)),
    headers: {},
    timestamp: 0,
  };
  const r = mapEventRecord(rec);
  if (!r.ok) throw new Error(r.reason);
  return r.row;
}

describe('counted once per (org, uuid)', () => {
  it('lower-cases the uuid, keeps raw as received, and takes the client IP from ipChain when the address is unusable', () => {
    const e = parse(event(rand, 'acme', 1, uuid(rand)));
    const upper = { ...e, uuid: e.uuid.toUpperCase() };
    expect(row(upper).uuid).toBe(e.uuid);
    expect(row(upper).raw).toBe(JSON.stringify(upper));
    const chain = { ip: '198.51.100.7', geographicalContext: { country: 'France' }, version: 'V4' };
    expect(
      row({ ...e, client: { ...e.client, ipAddress: 'null' }, request: { ipChain: [chain, { ip: '10.1.1.1' }] } })
        .client_ip,
    ).toBe('198.51.100.7');
    expect(
      row({
        ...e,
        client: { ...e.client, ipAddress: null },
        request: { ipChain: [{ ip: 'garbage' }, { ip: '2001:db8::1' }] },
      }).client_ip,
    ).toBe('2001:db8::1');
    expect(
      row({ ...e, client: { ...e.client, ipAddress: '203.0.113.9' }, request: { ipChain: [chain] } }).client_ip,
    ).toBe('203.0.113.9');
    expect(row({ ...e, client: {} }).client_ip).toBe('::');
  });

  it('folds a hook copy (upper-case uuid, "null" IP, no geography) and a poller copy of one event into one row', async () => {
    await migrate(store, log);
    const topics = topicNames(randomName('fid'));
    await stream.ensureTopics([
      { name: topics.logs, partitions: 2 },
      { name: topics.deadletter, partitions: 1 },
    ]);
    const org = randomName('acme');
    const polled = Array.from({ length: 20 }, (_, i) => ({
      ...parse(event(rand, org, i, uuid(rand))),
      client: { ipAddress: `192.0.2.${i + 1}`, geographicalContext: { country: 'United States', city: 'Portland' } },
    }));
    const hooked = polled.map((e) => ({
      ...e,
      uuid: e.uuid.toUpperCase(),
      client: { ipAddress: 'null' },
      request: { ipChain: [{ ip: e.client.ipAddress }] },
    }));
    await stream.append(topics.logs, [
      ...hooked.map((e) => asRecord(e, org, 'hook')),
      ...polled.map((e) => asRecord(e, org, 'system-log')),
    ]);
    const group = randomName('sink');
    const sink = await startClickHouseSink({
      stream,
      store,
      topics,
      group,
      logger: log,
      maxBatchWaitMs: 20,
      consumeDeadletter: false,
    });
    try {
      await waitFor(
        async () => [...(await stream.committedOffsets(topics.logs, group)).values()].reduce((a, b) => a + b, 0) === 40,
        { what: 'all committed' },
      );
    } finally {
      await sink.stop();
    }
    const rows = await store.query<{ uuid: string; ip: string }>(
      `SELECT uuid, toString(client_ip) AS ip FROM ${store.database}.events WHERE org = {org:String} ORDER BY uuid`,
      { org },
    );
    expect(rows.map((r) => r.uuid)).toEqual(polled.map((e) => e.uuid).sort());
    const ipOf = new Map(polled.map((e) => [e.uuid, `::ffff:${e.client.ipAddress as string}`]));
    for (const r of rows) expect(r.ip).toBe(ipOf.get(r.uuid));
  });

  it('migration 008 re-keys rows written with upper-case uuids and keeps every one', async () => {
    const db = openStore({ database: randomName('fid008'), dataDir, logger: log });
    try {
      const dir = join(dataDir, 'upto007');
      cpSync(defaultMigrationsDir(), dir, { recursive: true });
      for (const m of loadMigrations(dir)) if (m.version >= 8) rmSync(join(dir, m.file));
      await migrate(db, log, { dir });
      const events = Array.from({ length: 30 }, (_, i) => parse(event(rand, 'acme', i, uuid(rand))));
      const rows = events.map((e, i) => {
        const r = row(e);
        // Written before 008: some uuids as they came, upper-cased, some events twice in both forms.
        return { ...r, org: 'acme', uuid: i % 3 === 0 ? e.uuid.toUpperCase() : e.uuid };
      });
      const twice = events.slice(0, 6).map((e) => ({ ...row(e), org: 'acme' }));
      await db.insertJson('events_v2', [...rows, ...twice]);
      const before = Number(
        (await db.query<{ n: string }>(`SELECT uniqExact(uuid) AS n FROM ${db.database}.events_v2`))[0]!.n,
      );
      expect(before).toBe(30 + 2); // events 0 and 3 are there in both forms

      await migrate(db, log);
      const after = await db.query<{ uuid: string; raw: string }>(
        `SELECT uuid, raw FROM ${db.database}.events ORDER BY uuid`,
      );
      expect(after.map((r) => r.uuid)).toEqual(events.map((e) => e.uuid).sort());
      const raws = new Map(events.map((e) => [e.uuid, JSON.stringify(e)]));
      for (const r of after) expect(r.raw).toBe(raws.get(r.uuid));
      const [upper] = await db.query<{ n: string }>(
        `SELECT count() AS n FROM ${db.database}.events_v2 WHERE uuid != lower(uuid)`,
      );
      expect(upper!.n).toBe('0');
    } finally {
      await db.close();
    }
  });
});
