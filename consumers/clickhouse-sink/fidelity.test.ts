/**
 * Counted once per (org, uuid), with events the project generates: copies of
 * an event (its uuid, eventType and published, however written) are one row,
 * a uuid another event reuses is that event's own row (reused_uuids lists
 * it); the
 * mapping lower-cases uuids (raw kept as received), falls back to
 * request.ipChain for the client IP, keeps IPv4 as IPv4 and maps what an event
 * leaves out to NULL (not ''/0/false); a hook copy and a poller copy of one
 * event with different optional fields fold into one row holding every known
 * value, whichever came first; migration 008 re-keys rows written before with
 * upper-case uuids and keeps every one of them; migration 011 copies every v2
 * row into events_v3.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/support/random.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { silentLogger } from '../../platform/log.js';
import {
  defaultMigrationsDir,
  loadMigrations,
  migrate,
  openStore,
  renderStatement,
  type Store,
} from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import type { ConsumedRecord, StreamRecord } from '../../platform/stream/types.js';
import { event, uuid } from './crash-replay.fixture.js';
import { startClickHouseSink } from './index.js';
import { mapEventRecord, type EventRow } from './rows.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { runNamedQuery } from '../../analytics/run.js';

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
  headers: { [Header.org]: org, [Header.source]: source, ...(source === 'hook' ? { [Header.hookId]: 'h1' } : {}) },
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
    expect(row({ ...e, client: {} }).client_ip).toBeNull();
  });

  it('stores IPv4 as a.b.c.d (also when sent IPv4-mapped) and IPv6 in one canonical spelling', () => {
    const e = parse(event(rand, 'acme', 1, uuid(rand)));
    const ip = (ipAddress: string) => row({ ...e, client: { ipAddress } }).client_ip;
    expect(ip('192.0.2.1')).toBe('192.0.2.1');
    expect(ip('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(ip('::FFFF:C000:0201')).toBe('192.0.2.1');
    expect(ip(' 2001:DB8:0:0:0:0:0:1 ')).toBe('2001:db8::1');
    expect(ip('2001:0db8:0000:0000:0000:ff00:0042:8329')).toBe('2001:db8::ff00:42:8329');
  });

  it('maps what an event leaves out to null, distinct from the false, 0 and "" it does send', () => {
    const e = parse(event(rand, 'acme', 1, uuid(rand)));
    const absent = row({ uuid: e.uuid, published: e.published, eventType: e.eventType });
    const { org, uuid: u, published, event_type, raw, source, hook_id, delivery_id, received_at, ...rest } = absent;
    const { target_id, target_type, target_alternate_id, target_display_name, ...optional } = rest;
    expect(Object.values(optional).every((v) => v === null)).toBe(true);
    expect([target_id, target_type, target_alternate_id, target_display_name]).toEqual([[], [], [], []]);
    expect([org, u, published, event_type, raw, source, hook_id, delivery_id]).not.toContain(null);
    expect(received_at).not.toBeNull();
    const nulls = row({
      ...e,
      client: { geographicalContext: null, zone: { x: 1 } },
      securityContext: { asNumber: null, isProxy: null, asOrg: null },
    });
    expect(nulls).toMatchObject({ client_zone: null, geo_city: null, as_number: null, is_proxy: null, as_org: null });
    const sent = row({
      ...e,
      client: { geographicalContext: { city: '' }, zone: '' },
      securityContext: { asNumber: 0, isProxy: false, asOrg: '' },
    });
    expect(sent).toMatchObject({ client_zone: '', geo_city: '', as_number: 0, is_proxy: false, as_org: '' });
  });

  it('folds a hook copy and a poller copy with different optional fields into one row with every known value, in either order', async () => {
    await migrate(store, log);
    const topics = topicNames(randomName('fid'));
    await stream.ensureTopics([
      { name: topics.logs, partitions: 2 },
      { name: topics.deadletter, partitions: 1 },
    ]);
    const hookFirst = randomName('acme');
    const pollFirst = randomName('globex');
    // The poller copy: geography, no securityContext. The hook copy: upper-case uuid, "null" address with
    // the client in request.ipChain, no geography, a securityContext that says false and '', a transaction.
    const copies = (org: string) =>
      Array.from({ length: 10 }, (_, i) => {
        const e = parse(event(rand, org, i, uuid(rand)));
        const polled = {
          ...e,
          client: {
            ipAddress: `192.0.2.${i + 1}`,
            geographicalContext: { country: 'United States', city: 'Portland' },
          },
        };
        const hooked = {
          ...e,
          uuid: e.uuid.toUpperCase(),
          client: { ipAddress: 'null' },
          request: { ipChain: [{ ip: `192.0.2.${i + 1}` }] },
          securityContext: { isProxy: false, asOrg: '' },
          transaction: { id: `tx-${i}`, type: 'WEB' },
        };
        return {
          uuid: e.uuid,
          ip: `192.0.2.${i + 1}`,
          outcome: (e.outcome as { result: string }).result,
          polled,
          hooked,
        };
      });
    const a = copies(hookFirst);
    const b = copies(pollFirst);
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
    const committed = async (n: number) =>
      waitFor(
        async () => [...(await stream.committedOffsets(topics.logs, group)).values()].reduce((x, y) => x + y, 0),
        { until: (sum) => sum === n, what: `${n} committed` },
      );
    try {
      // Two rounds, so the copies are separate inserts (separate parts) that only a merge or FINAL folds.
      await stream.append(topics.logs, [
        ...a.map((c) => asRecord(c.hooked, hookFirst, 'hook')),
        ...b.map((c) => asRecord(c.polled, pollFirst, 'system-log')),
      ]);
      await committed(20);
      await stream.append(topics.logs, [
        ...a.map((c) => asRecord(c.polled, hookFirst, 'system-log')),
        ...b.map((c) => asRecord(c.hooked, pollFirst, 'hook')),
      ]);
      await committed(40);
    } finally {
      await sink.stop();
    }
    const orgs = [hookFirst, pollFirst];
    const [raw] = await store.query<{ n: string }>(
      `SELECT count() AS n FROM ${store.database}.${EVENTS_TABLE} WHERE org IN {orgs:Array(String)}`,
      { orgs },
    );
    expect(raw!.n).toBe('40'); // both copies are there: what follows is the fold, not a lost insert

    type Folded = {
      org: string;
      uuid: string;
      ip: string | null;
      country: string | null;
      city: string | null;
      state: string | null;
      is_proxy: boolean | null;
      as_org: string | null;
      as_number: number | null;
      transaction_id: string | null;
      outcome_result: string | null;
      hook_id: string;
    };
    const read = () =>
      store.query<Folded>(
        `SELECT org, uuid, client_ip AS ip, geo_country AS country, geo_city AS city, geo_state AS state, is_proxy,
                as_org, as_number, transaction_id, outcome_result, hook_id
         FROM ${store.database}.events WHERE org IN {orgs:Array(String)} ORDER BY org, uuid`,
        { orgs },
      );
    const expected = (org: string, cs: typeof a) =>
      cs
        .map((c) => ({
          org,
          uuid: c.uuid,
          ip: c.ip, // IPv4 as IPv4
          country: 'United States', // the poller's
          city: 'Portland',
          state: null, // no copy said: unknown
          is_proxy: false, // the hook's false, not unknown
          as_org: '', // the hook's '', not unknown
          as_number: null,
          transaction_id: c.hooked.transaction.id,
          outcome_result: c.outcome, // both copies'
          hook_id: 'h1',
        }))
        .sort((x, y) => x.uuid.localeCompare(y.uuid));
    const want = [...expected(hookFirst, a), ...expected(pollFirst, b)].sort(
      (x, y) => x.org.localeCompare(y.org) || x.uuid.localeCompare(y.uuid),
    );
    expect(await read()).toEqual(want);
    // A merge folds the parts the same way FINAL does.
    await store.command(`OPTIMIZE TABLE ${store.database}.${EVENTS_TABLE} FINAL`);
    expect(await read()).toEqual(want);
    const [counts] = await store.query<{ rows: string; unknown: string; no: string }>(
      `SELECT count() AS rows, countIf(is_proxy IS NULL) AS unknown, countIf(is_proxy = false) AS no
       FROM ${store.database}.${EVENTS_TABLE} WHERE org IN {orgs:Array(String)}`,
      { orgs },
    );
    expect(counts).toEqual({ rows: '20', unknown: '0', no: '20' });
  });

  it('folds copies (one uuid, eventType and published, however written); a uuid reused by another event is another row, listed by reused_uuids', async () => {
    await migrate(store, log);
    const topics = topicNames(randomName('reuse'));
    await stream.ensureTopics([
      { name: topics.logs, partitions: 1 },
      { name: topics.deadletter, partitions: 1 },
    ]);
    const org = randomName('acme');
    const e = parse(event(rand, org, 1, uuid(rand)));
    const at = Date.parse(e.published as string);
    const copies = [
      e,
      // The same event again: the uuid upper-cased, published in another zone and precision.
      { ...e, uuid: e.uuid.toUpperCase(), published: new Date(at + 3_600_000).toISOString().replace('Z', '+01:00') },
    ];
    const others = [
      { ...e, eventType: 'system.import.user.match' }, // what happened differs
      { ...e, published: new Date(at + 1000).toISOString() }, // when it happened differs
    ];
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
      await stream.append(
        topics.logs,
        [...copies, ...others].map((x) => asRecord(x, org, 'hook')),
      );
      await waitFor(async () => (await stream.committedOffsets(topics.logs, group)).get(0), {
        until: (n) => n === 4,
        what: '4 committed',
      });
    } finally {
      await sink.stop();
    }
    const rows = await store.query<{ event_type: string; published: string }>(
      `SELECT event_type, toString(published) AS published FROM ${store.database}.events WHERE org = {org:String} ORDER BY published, event_type`,
      { org },
    );
    const ch = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
    expect(rows).toEqual([
      { event_type: 'system.import.user.match', published: ch(at) },
      { event_type: e.eventType, published: ch(at) },
      { event_type: e.eventType, published: ch(at + 1000) },
    ]);
    const reused = await runNamedQuery(store, 'reused_uuids', {
      org,
      since: new Date(at - 60_000).toISOString(),
      until: new Date(at + 60_000).toISOString(),
    });
    expect(reused.rows).toEqual([expect.objectContaining({ uuid: e.uuid, events: '3' })]);
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
  it('migration 011 copies every v2 row into events_v3: known values kept, defaults that meant absent NULL, IPv4 as IPv4', async () => {
    const db = openStore({ database: randomName('fid011'), dataDir, logger: log });
    try {
      const dir = join(dataDir, 'upto010');
      cpSync(defaultMigrationsDir(), dir, { recursive: true });
      for (const m of loadMigrations(dir)) if (m.version >= 11) rmSync(join(dir, m.file));
      await migrate(db, log, { dir });
      // Unmerged copies in v2 stay unmerged until the copy, as they may be on a live store.
      await db.command(`SYSTEM STOP MERGES ${db.database}.events_v2`);
      const base = Array.from({ length: 12 }, (_, i) => parse(event(rand, 'acme', i, uuid(rand))));
      const geo = { country: 'United States', city: 'Portland' };
      const known = base.slice(0, 4).map((e) => ({
        ...e,
        client: { ipAddress: e.client.ipAddress, geographicalContext: geo },
        securityContext: { asNumber: 64496, asOrg: 'example fiber', isProxy: true },
      }));
      const absent = base.slice(4, 7).map((e) => ({ ...e, client: {} }));
      const sentEmpty = base.slice(7, 9).map((e) => ({
        ...e,
        client: { ipAddress: 'null', geographicalContext: { city: '' } },
        securityContext: { asNumber: 0, asOrg: '', isProxy: false },
      }));
      const v6 = base.slice(9, 10).map((e) => ({ ...e, client: { ipAddress: '2001:DB8:0:0::7' } }));
      // One event v2 holds twice, not merged yet: the later copy without geography must not blank it.
      const pair = base
        .slice(10, 12)
        .map((e) => ({ ...e, client: { ipAddress: '198.51.100.9', geographicalContext: geo } }));
      const pairLater = pair.map((e) => ({ ...e, client: { ipAddress: '198.51.100.9' } }));
      // What the v2 sink wrote: '' / 0 / false for what was absent, '::' for no address.
      const v2 = (e: object) => {
        const r = row(e);
        return Object.fromEntries(
          Object.entries({ ...r, org: 'acme' }).map(([k, v]) => [
            k,
            v !== null
              ? v
              : k === 'client_ip'
                ? '::'
                : k === 'as_number'
                  ? 0
                  : k === 'is_proxy'
                    ? false
                    : k.startsWith('geo_l')
                      ? null
                      : '',
          ]),
        );
      };
      await db.insertJson('events_v2', [...known, ...absent, ...sentEmpty, ...v6, ...pair].map(v2));
      await db.insertJson('events_v2', pairLater.map(v2));
      const [before] = await db.query<{ events: string; rows: string }>(
        `SELECT uniqExact(org, uuid) AS events, count() AS rows FROM ${db.database}.events_v2`,
      );
      expect(before).toEqual({ events: '12', rows: '14' });

      await migrate(db, log);
      type V3 = {
        uuid: string;
        ip: string | null;
        city: string | null;
        country: string | null;
        asn: number | null;
        as_org: string | null;
        is_proxy: boolean | null;
        raw: string;
      };
      const read = async () =>
        new Map(
          (
            await db.query<V3>(
              `SELECT uuid, client_ip AS ip, geo_city AS city, geo_country AS country, as_number AS asn, as_org, is_proxy, raw
               FROM ${db.database}.events ORDER BY uuid`,
            )
          ).map((r) => [r.uuid, r]),
        );
      const after = await read();
      expect([...after.keys()]).toEqual(base.map((e) => e.uuid).sort()); // counts equal: every event, once
      for (const e of known)
        expect(after.get(e.uuid)).toMatchObject({
          ip: e.client.ipAddress, // was ::ffff:10.0.x.y
          city: 'Portland',
          asn: 64496,
          as_org: 'example fiber',
          is_proxy: true,
          raw: JSON.stringify(e),
        });
      for (const e of absent)
        expect(after.get(e.uuid)).toMatchObject({
          ip: null,
          city: null,
          country: null,
          asn: null,
          as_org: null,
          is_proxy: null,
        });
      for (const e of sentEmpty)
        expect(after.get(e.uuid)).toMatchObject({
          ip: null,
          city: '',
          country: null,
          asn: 0,
          as_org: '',
          is_proxy: false,
        });
      expect(after.get(v6[0]!.uuid)!.ip).toBe('2001:db8::7');
      for (const e of pair)
        expect(after.get(e.uuid)).toMatchObject({ ip: '198.51.100.9', city: 'Portland', country: 'United States' });
      const [v3rows] = await db.query<{ n: string }>(`SELECT count() AS n FROM ${db.database}.events_v3`);
      expect(Number(v3rows!.n)).toBeGreaterThanOrEqual(12);

      // The file run again (a crashed or racing migration) changes nothing that is read.
      const [file] = loadMigrations(defaultMigrationsDir()).filter((m) => m.version === 11);
      for (const st of file!.statements) await db.command(renderStatement(st, db.database));
      expect(await read()).toEqual(after);
    } finally {
      await db.close();
    }
  });
});
