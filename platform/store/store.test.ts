/**
 * The store against real embedded ClickHouse (chdb). One chdb path for the
 * whole file (one engine per process); tests isolate by database name.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomName } from '../../test/support/wait.js';
import { countRows, freshTable as freshTableIn } from '../../test/support/store-tables.js';
import { silentLogger } from '../log.js';
import { ChdbInserters } from './chdb-inserts.js';
import { openStore, type Store } from './store.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-store-'));
let store: Store;

const freshTable = (ddlColumns: string, engine?: string) => freshTableIn(store, ddlColumns, engine);
const count = (table: string) => countRows(store, table);

beforeAll(async () => {
  store = openStore({ database: randomName('store'), dataDir, logger: silentLogger() });
  await store.command(`CREATE DATABASE IF NOT EXISTS ${store.database}`);
});

afterAll(async () => {
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('store (embedded chdb)', () => {
  it('is embedded, answers ping, and keeps its files under <dataDir>/clickhouse', async () => {
    expect(store.kind).toBe('embedded');
    await store.ping();
    const [row] = await store.query<{ path: string }>(
      `SELECT data_path AS path FROM system.databases WHERE name = {db:String}`,
      { db: store.database },
    );
    expect(row!.path.startsWith(join(dataDir, 'clickhouse'))).toBe(true);
  });

  it('holds writes for a backup: a running insert ends first, later ones wait for the release, reads go on', async () => {
    const table = await freshTable('n UInt32');
    const running = store.insertJson(table, [{ n: 1 }]);
    const release = await store.holdWrites();
    // The insert that was running has landed once the hold is in place.
    await running;
    expect(await count(table)).toBe(1);
    let landed = false;
    const held = store.insertJson(table, [{ n: 2 }]).then(() => (landed = true));
    // A write that waits never lands while the hold lasts, however long the reads around it take.
    for (let i = 0; i < 5; i++) expect(await count(table)).toBe(1);
    expect(landed).toBe(false);
    release();
    await held;
    expect(await count(table)).toBe(2);
  });

  it('backs up and restores a database only inside its backup directory', async () => {
    const table = await freshTable('n UInt32');
    await store.insertJson(table, [{ n: 7 }]);
    const staging = join(dataDir, 'backup-staging', randomName('b'));
    await store.backupDatabase(staging);
    await expect(store.backupDatabase(join(tmpdir(), randomName('elsewhere')))).rejects.toThrow(/not allowed/);
    const restored = openStore({ database: randomName('restored'), dataDir, logger: silentLogger() });
    try {
      await restored.restoreDatabase(staging, store.database);
      const [row] = await restored.query<{ n: string }>(`SELECT sum(n) AS n FROM ${restored.database}.${table}`);
      expect(Number(row!.n)).toBe(7);
    } finally {
      await restored.command(`DROP DATABASE IF EXISTS ${restored.database}`);
      await restored.close();
    }
  });

  it('refuses a database name that is not an identifier, before touching ClickHouse', () => {
    expect(() => openStore({ database: 'x; DROP DATABASE y', dataDir, logger: silentLogger() })).toThrow(/must match/);
    expect(() => openStore({ database: '1abc', dataDir, logger: silentLogger() })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });

  it('binds values as parameters: quotes, backslashes and SQL in values arrive as data', async () => {
    const table = await freshTable("s String, ts DateTime64(3, 'UTC')");
    const nasty = `it's a \\ trap'); DROP TABLE ${store.database}.${table}; --`;
    await store.command(`INSERT INTO ${store.database}.${table} SELECT {s:String}, {ts:DateTime64(3, 'UTC')}`, {
      s: nasty,
      ts: '2022-03-22 14:21:53.225',
    });
    const rows = await store.query<{ s: string; ts: string }>(
      `SELECT s, ts FROM ${store.database}.${table} WHERE s = {s:String}`,
      { s: nasty },
    );
    expect(rows).toEqual([{ s: nasty, ts: '2022-03-22 14:21:53.225' }]);
  });

  it('returns 64-bit integers as strings, as a ClickHouse server does by default', async () => {
    const [row] = await store.query<{ big: unknown; small: unknown }>(
      'SELECT toUInt64(9007199254740993) AS big, toUInt32(7) AS small',
    );
    expect(row).toEqual({ big: '9007199254740993', small: 7 });
  });

  it('drops a repeated insert carrying the same dedup token, and only that one', async () => {
    const table = await freshTable(
      'k String',
      'MergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 100',
    );
    await store.insertJson(table, [{ k: 'a' }, { k: 'b' }], { dedupToken: 'tok-1' });
    await store.insertJson(table, [{ k: 'a' }, { k: 'b' }], { dedupToken: 'tok-1' });
    expect(await count(table)).toBe(2);
    await store.insertJson(table, [{ k: 'a' }, { k: 'b' }], { dedupToken: 'tok-2' });
    expect(await count(table)).toBe(4);
    // No token: must not inherit tok-2 from the previous insert (chdb keeps SETs for the session).
    await store.insertJson(table, [{ k: 'c' }]);
    expect(await count(table)).toBe(5);
  });

  it('keeps concurrent inserts with different tokens apart', async () => {
    const table = await freshTable(
      'k String, n UInt32',
      'MergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 1000',
    );
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.insertJson(
          table,
          Array.from({ length: 50 }, (_, j) => ({ k: `${i}-${j}`, n: i })),
          { dedupToken: `c-${i}` },
        ),
      ),
    );
    const [row] = await store.query<{ c: string; u: string }>(
      `SELECT count() AS c, uniqExact(n) AS u FROM ${store.database}.${table}`,
    );
    expect(row).toEqual({ c: '1000', u: '20' });
  });

  it('classifies what chdb rejects: bad rows are STORE_REJECTED_ROW, mistakes STORE_QUERY_FAILED', async () => {
    const table = await freshTable('ip IPv6, n UInt32');
    await expect(
      store.insertJson(
        table,
        [
          { ip: '::1', n: 1 },
          { ip: 'redacted', n: 2 },
        ],
        { dedupToken: 'x' },
      ),
    ).rejects.toMatchObject({
      code: 'STORE_REJECTED_ROW',
      retriable: false,
    });
    await expect(store.insertJson(table, [{ ip: '::1', n: 'many' }])).rejects.toMatchObject({
      code: 'STORE_REJECTED_ROW',
    });
    expect(await count(table)).toBe(0); // a rejected block lands nothing
    await expect(store.query(`SELECT * FROM ${store.database}.no_such_table`)).rejects.toMatchObject({
      code: 'STORE_QUERY_FAILED',
      retriable: false,
    });
    await expect(store.command('SELEC 1')).rejects.toMatchObject({
      code: 'STORE_QUERY_FAILED',
      message: expect.stringMatching(/SYNTAX_ERROR/),
    });
    await expect(store.insertJson('bad-name', [{ a: 1 }])).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('runs ad-hoc SQL read-only on its own connection, leaving the store writable', async () => {
    const table = await freshTable(
      'k String, n UInt64',
      'MergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 100',
    );
    await store.insertJson(table, [{ k: 'a', n: 1 }], { dedupToken: 'ro-1' });
    // Unqualified: resolves to the store's database.
    expect(await store.readOnlyQuery(`SELECT k, n, 'x' AS c FROM ${table}`)).toEqual({
      columns: ['k', 'n', 'c'],
      rows: [{ k: 'a', n: '1', c: 'x' }],
    });
    for (const sql of [
      `INSERT INTO ${table} VALUES ('b', 2)`,
      `CREATE TABLE ${table}_2 (a UInt8) ENGINE = Memory`,
      `DROP TABLE ${table}`,
      `SELECT 1 SETTINGS readonly = 0`,
    ]) {
      await expect(store.readOnlyQuery(sql), sql).rejects.toMatchObject({
        code: 'STORE_QUERY_FAILED',
        message: expect.stringMatching(/READONLY/),
      });
    }
    // The store's own connection is untouched: inserts (which set a dedup token) still work.
    await store.insertJson(table, [{ k: 'c', n: 3 }], { dedupToken: 'ro-2' });
    expect(await count(table)).toBe(2);
    expect((await store.readOnlyQuery(`SELECT count() AS n FROM ${table}`)).rows).toEqual([{ n: '2' }]);
  });

  it('refuses BACKUP and RESTORE in ad-hoc SQL, however written, and writes no file', async () => {
    const table = await freshTable('n UInt32');
    await store.insertJson(table, [{ n: 1 }]);
    const staging = join(dataDir, 'backup-staging');
    mkdirSync(staging, { recursive: true });
    const before = readdirSync(staging);
    const target = (name: string) => `File('${join(staging, name)}')`;
    for (const sql of [
      `BACKUP TABLE ${table} TO ${target(randomName('adhoc'))}`,
      `/* a comment */ backup\n  DATABASE ${store.database} TO ${target(randomName('adhoc'))}`,
      `-- line comment\nBACKUP TABLE ${table} TO ${target(randomName('adhoc'))} SETTINGS async = 1`,
      `RESTORE TABLE ${table} AS ${table}_r FROM ${target('nothing')}`,
    ]) {
      await expect(store.readOnlyQuery(sql), sql).rejects.toMatchObject({
        code: 'QUERY_INVALID',
        message: expect.stringMatching(/^(BACKUP|RESTORE) is refused here: ad-hoc SQL is read-only/),
      });
    }
    expect(readdirSync(staging)).toEqual(before);
    // What ClickHouse itself refuses still fails with its own reason, and reads still work.
    await expect(store.readOnlyQuery('SELEC 1')).rejects.toMatchObject({
      code: 'STORE_QUERY_FAILED',
      message: expect.stringMatching(/SYNTAX_ERROR/),
    });
    expect((await store.readOnlyQuery(`SELECT sum(n) AS n FROM ${table}`)).rows).toEqual([{ n: '1' }]);
  });

  it('drops a repeated TSV insert in every table a view writes from it, and in the views of those', async () => {
    // The sink's shape: a Null table, a view into a table, and a view on that table into a second one whose
    // column is a sum (migrations 013 and 032).
    const db = store.database;
    const src = randomName('src');
    const first = await freshTable(
      'k String, v UInt64',
      'MergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 100',
    );
    const second = await freshTable(
      'k String, n SimpleAggregateFunction(sum, UInt64)',
      'AggregatingMergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 100',
    );
    await store.command(`CREATE TABLE ${db}.${src} (k String, v UInt64) ENGINE = Null`);
    await store.command(`CREATE MATERIALIZED VIEW ${db}.${src}_mv TO ${db}.${first} AS SELECT * FROM ${db}.${src}`);
    await store.command(
      `CREATE MATERIALIZED VIEW ${db}.${first}_mv TO ${db}.${second} AS SELECT k, 1 AS n FROM ${db}.${first}`,
    );
    const body = Buffer.from('a\t1\nb\t2\n');
    const both = async () => {
      const [row] = await store.query<{ rows: string; n: string }>(
        `SELECT (SELECT count() FROM ${db}.${first}) AS rows, (SELECT sum(n) FROM ${db}.${second}) AS n`,
      );
      return row;
    };
    await store.insertTsv(src, ['k', 'v'], body, { dedupToken: 'views-1' });
    await store.insertTsv(src, ['k', 'v'], body, { dedupToken: 'views-1' });
    expect(await both()).toEqual({ rows: '2', n: '2' });
    await store.insertTsv(src, ['k', 'v'], body, { dedupToken: 'views-2' });
    expect(await both()).toEqual({ rows: '4', n: '4' });

    // What drops the repeat in the views' tables is the setting the store sends with each insert: the same
    // insert twice without it (on another connection to the same engine) lands twice in both.
    const { createChdbConnection } = createRequire(import.meta.url)(
      'chdb/connection',
    ) as typeof import('chdb/connection');
    const raw = new ChdbInserters(() => createChdbConnection({ path: join(dataDir, 'clickhouse') }), 1);
    try {
      for (let i = 0; i < 2; i++)
        await raw.insert({
          table: `${db}.${src}`,
          columns: ['k', 'v'],
          format: 'TabSeparated',
          body,
          settings: { insert_deduplication_token: 'views-3', deduplicate_blocks_in_dependent_materialized_views: 0 },
        });
    } finally {
      await raw.close();
    }
    expect(await both()).toEqual({ rows: '8', n: '8' });
  });

  it('does nothing for an empty insert', async () => {
    const table = await freshTable('k String');
    await store.insertJson(table, []);
    expect(await count(table)).toBe(0);
  });
});

describe('store (server)', () => {
  it("sends a TSV insert's settings with it: synchronous, its token, dropped as a repeat in the views' tables too", async () => {
    const requests: Array<{ url: URL; body: string }> = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        requests.push({ url: new URL(req.url ?? '/', 'http://x'), body: Buffer.concat(chunks).toString() });
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end();
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const { port } = server.address() as AddressInfo;
    const remote = openStore({ url: `http://127.0.0.1:${port}`, database: 'hl', dataDir, logger: silentLogger() });
    try {
      await remote.insertTsv('events_v3_input', ['org', 'uuid'], Buffer.from('o\tu\n'), {
        dedupToken: 't-0-5-9',
        foldOnInsert: false,
      });
    } finally {
      await remote.close();
      await new Promise((ok) => server.close(ok));
    }
    expect(requests).toHaveLength(1);
    const { url, body } = requests[0]!;
    expect(url.searchParams.get('query')).toMatch(
      /^INSERT INTO hl\.events_v3_input \(org, ?uuid\) FORMAT TabSeparated/,
    );
    expect(body).toBe('o\tu\n');
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      async_insert: '0',
      insert_deduplicate: '1',
      insert_deduplication_token: 't-0-5-9',
      deduplicate_blocks_in_dependent_materialized_views: '1',
      optimize_on_insert: '0',
    });
  });
});
