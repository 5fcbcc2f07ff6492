/**
 * schemas/clickhouse/005_events_v2.sql against real embedded ClickHouse: a
 * database at v1 (001-004) holding the fixture events is migrated, and every
 * row is in v2, typed, with its raw JSON byte for byte; running the file's
 * statements again adds nothing.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mapEventRecord } from '../consumers/clickhouse-sink/rows.js';
import { silentLogger } from '../platform/log.js';
import { defaultMigrationsDir, loadMigrations, migrate, openStore, renderStatement } from '../platform/store/index.js';
import { Header } from '../platform/stream/headers.js';
import { fixtureLines } from '../test/fixtures/index.js';
import { randomName } from '../test/support/wait.js';
import { applyRetention } from './retention.js';
import { EVENTS_TABLE } from '../schemas/tables.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-v2-'));
const store = openStore({ database: randomName('v1to2'), dataDir, logger: silentLogger() });
const db = store.database;

afterAll(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** v1 rows as the v1 sink wrote them: client_ip the string as sent. */
function v1Rows(): Array<Record<string, unknown>> {
  const lines = fixtureLines('logevents.valid.jsonl');
  return lines.flatMap((line, i) => {
    const event = JSON.parse(line) as { client?: { ipAddress?: unknown } };
    const r = mapEventRecord({
      topic: 't',
      partition: 0,
      offset: i,
      key: null,
      value: Buffer.from(line),
      timestamp: 1_700_000_000_000,
      headers: { [Header.org]: i % 2 ? 'acme' : 'globex' },
    });
    if (!r.ok) throw new Error(r.reason);
    const { client_browser: _b, client_os: _o, as_number: _n, as_org: _a, is_proxy: _p, ...v1 } = r.row;
    return [{ ...v1, client_ip: typeof event.client?.ipAddress === 'string' ? event.client.ipAddress : '' }];
  });
}

describe('v1 → v2 (005_events_v2.sql)', () => {
  it('keeps every v1 row, raw byte for byte, and types the new columns', async () => {
    const dir = join(dataDir, 'v1-migrations');
    cpSync(defaultMigrationsDir(), dir, { recursive: true });
    rmSync(join(dir, '005_events_v2.sql'));
    for (const m of loadMigrations(dir)) if (m.version > 5) rmSync(join(dir, m.file));
    await migrate(store, silentLogger(), { dir });

    const rows = v1Rows();
    rows[3] = { ...rows[3], client_ip: 'redacted' };
    rows[4] = { ...rows[4], client_ip: '2001:db8::7' };
    await store.insertJson('events', rows.slice(0, 60));
    await store.insertJson('events', rows.slice(60));
    await store.insertJson('events', rows.slice(0, 5), { dedupToken: 'again' }); // a duplicate delivery v1 had not folded yet
    const [v1] = await store.query<{ n: string; raw: string }>(
      `SELECT uniqExact(org, uuid) AS n, count() AS raw FROM ${db}.events`,
    );
    expect(v1).toEqual({ n: String(rows.length), raw: String(rows.length + 5) });

    await migrate(store, silentLogger());

    const [view] = await store.query<{ engine: string }>(
      `SELECT engine FROM system.tables WHERE database = {db:String} AND name = 'events'`,
      { db },
    );
    expect(view!.engine).toBe('View');
    const after = await store.query<{
      org: string;
      uuid: string;
      raw: string;
      ip: string | null;
      asn: number;
      browser: string;
    }>(
      `SELECT org, uuid, raw, toString(client_ip) AS ip, as_number AS asn, client_browser AS browser FROM ${db}.events ORDER BY uuid`,
    );
    expect(after).toHaveLength(rows.length); // the view reads FINAL: the duplicate folds
    const byUuid = new Map(after.map((r) => [`${r.org}/${r.uuid}`, r]));
    for (const r of rows) expect(byUuid.get(`${r.org as string}/${r.uuid as string}`)?.raw).toBe(r.raw);
    // After 011 (the view reads events_v3): no usable address is NULL, IPv4 is a.b.c.d.
    expect(byUuid.get(`${rows[3]!.org as string}/${rows[3]!.uuid as string}`)!.ip).toBeNull();
    expect(byUuid.get(`${rows[4]!.org as string}/${rows[4]!.uuid as string}`)!.ip).toBe('2001:db8::7');
    const first = byUuid.get(`${rows[0]!.org as string}/${rows[0]!.uuid as string}`)!;
    expect(first).toMatchObject({ ip: '198.51.100.23', asn: 64496, browser: 'CHROME' });

    // The file's statements run again (a crashed or racing migration) add nothing.
    const [file] = loadMigrations(defaultMigrationsDir()).filter((m) => m.version === 5);
    for (const s of file!.statements) await store.command(renderStatement(s, db));
    const [again] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${db}.events`);
    expect(again!.n).toBe(String(rows.length));
  });

  it('sets, changes and removes the retention TTL from config (store.retention_days), and expired events go', async () => {
    const ttl = async () =>
      (
        await store.query<{ q: string }>(
          `SELECT create_table_query AS q FROM system.tables WHERE database = {db:String} AND name = {t:String}`,
          { db, t: EVENTS_TABLE },
        )
      )[0]!.q;
    await applyRetention(store, 400);
    expect(await ttl()).toMatch(/TTL toDateTime\(published\) \+ toIntervalDay\(400\)/);
    await applyRetention(store, 0);
    expect(await ttl()).not.toMatch(/ TTL /);
    // The fixture events are from 2025: a 30-day retention expires them all once the TTL is materialised.
    await applyRetention(store, 30);
    await store.command(`ALTER TABLE ${db}.${EVENTS_TABLE} MATERIALIZE TTL SETTINGS mutations_sync = 1`);
    const [left] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${db}.${EVENTS_TABLE}`);
    expect(left!.n).toBe('0');
    await expect(applyRetention(store, -1)).rejects.toThrow(RangeError);
  });
});
