/**
 * The store whose embedded engine lives on a thread of its own (`openStore({ thread: true })`, chdb-thread.ts), as
 * `hooklog start` opens it: the same answers as the in-thread store (store.test.ts) through every path a caller
 * uses (the store's methods, its raw inserts, its read-only connection, `store.client` with other formats), and
 * chdb never loaded on the calling thread. One engine per process: one such store for the whole file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomName } from '../../test/support/wait.js';
import { countRows, freshTable as freshTableIn } from '../../test/support/store-tables.js';
import { createLogger } from '../log.js';
import { openStore, type Store } from './store.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-store-thread-'));
const lines: Array<Record<string, unknown>> = [];
const logger = createLogger({
  level: 'info',
  destination: new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  }),
});
let store: Store;

const freshTable = (ddlColumns: string, engine?: string) => freshTableIn(store, ddlColumns, engine);
const count = (table: string) => countRows(store, table);

/** Files of the chdb package this thread has loaded (the engine's thread has a module cache of its own). */
const chdbLoadedHere = () =>
  Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes(`${sep}node_modules${sep}chdb${sep}`));

beforeAll(() => {
  store = openStore({ database: randomName('thread'), dataDir, logger, thread: true });
});

afterAll(async () => {
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('store (embedded chdb on its own thread)', () => {
  it('returns before the engine is open, takes statements meanwhile, and never loads chdb on this thread', async () => {
    // Sent before the engine has opened: the thread runs it once it has.
    const created = store.command(`CREATE DATABASE IF NOT EXISTS ${store.database}`);
    expect(lines.find((l) => l.msg === 'embedded ClickHouse opened')).toBeUndefined();
    await created;
    await store.ping();
    const opened = lines.find((l) => l.msg === 'embedded ClickHouse opened');
    expect(opened, JSON.stringify(lines)).toMatchObject({ path: join(dataDir, 'clickhouse') });
    expect(opened!.load_ms).toEqual(expect.any(Number));
    const [row] = await store.query<{ path: string }>(
      `SELECT data_path AS path FROM system.databases WHERE name = {db:String}`,
      { db: store.database },
    );
    expect(row!.path.startsWith(join(dataDir, 'clickhouse'))).toBe(true);
    expect(chdbLoadedHere()).toEqual([]);
  });

  it('binds values as parameters and returns 64-bit integers as strings', async () => {
    const table = await freshTable("s String, ts DateTime64(3, 'UTC')");
    const nasty = `it's a \\ trap'); DROP TABLE ${store.database}.${table}; --`;
    await store.command(`INSERT INTO ${store.database}.${table} SELECT {s:String}, {ts:DateTime64(3, 'UTC')}`, {
      s: nasty,
      ts: '2022-03-22 14:21:53.225',
    });
    expect(
      await store.query(`SELECT s, ts FROM ${store.database}.${table} WHERE s = {s:String}`, { s: nasty }),
    ).toEqual([{ s: nasty, ts: '2022-03-22 14:21:53.225' }]);
    const [big] = await store.query('SELECT toUInt64(9007199254740993) AS big, toUInt32(7) AS small');
    expect(big).toEqual({ big: '9007199254740993', small: 7 });
  });

  it('drops a repeated insert carrying the same dedup token, and only that one (JSON and TSV inserts)', async () => {
    const table = await freshTable(
      'k String',
      'MergeTree ORDER BY k SETTINGS non_replicated_deduplication_window = 100',
    );
    await store.insertJson(table, [{ k: 'a' }, { k: 'b' }], { dedupToken: 'tok-1' });
    await store.insertJson(table, [{ k: 'a' }, { k: 'b' }], { dedupToken: 'tok-1' });
    expect(await count(table)).toBe(2);
    // No token: must not inherit tok-1 (chdb keeps SETs for the session, on the thread as before).
    await store.insertJson(table, [{ k: 'c' }]);
    expect(await count(table)).toBe(3);
    // Raw TSV inserts, several at once on the thread's insert connections; a body bigger than Node's buffer pool.
    const body = Buffer.from(Array.from({ length: 2000 }, (_, i) => `r${i}\n`).join(''));
    await Promise.all([
      store.insertTsv(table, ['k'], body, { dedupToken: 'tsv-1' }),
      store.insertTsv(table, ['k'], Buffer.from('x\ny\n'), { dedupToken: 'tsv-2' }),
    ]);
    await store.insertTsv(table, ['k'], body, { dedupToken: 'tsv-1' });
    expect(await count(table)).toBe(3 + 2000 + 2);
    // The caller's body is untouched: the thread took a copy.
    expect(body.toString('latin1', 0, 3)).toBe('r0\n');
  });

  it('classifies what chdb rejects across the thread: bad rows STORE_REJECTED_ROW, mistakes STORE_QUERY_FAILED', async () => {
    const table = await freshTable('ip IPv6, n UInt32');
    await expect(store.insertJson(table, [{ ip: 'redacted', n: 2 }], { dedupToken: 'x' })).rejects.toMatchObject({
      code: 'STORE_REJECTED_ROW',
      retriable: false,
    });
    await expect(store.insertTsv(table, ['ip', 'n'], Buffer.from('::1\tmany\n'))).rejects.toMatchObject({
      code: 'STORE_REJECTED_ROW',
    });
    expect(await count(table)).toBe(0);
    await expect(store.query(`SELECT * FROM ${store.database}.no_such_table`)).rejects.toMatchObject({
      code: 'STORE_QUERY_FAILED',
      retriable: false,
    });
    await expect(store.command('SELEC 1')).rejects.toMatchObject({
      code: 'STORE_QUERY_FAILED',
      message: expect.stringMatching(/SYNTAX_ERROR/),
    });
  });

  it("serves the client's other formats and row streams (the query API's and the backtest's reads)", async () => {
    const table = await freshTable('n UInt32');
    await store.insertJson(
      table,
      Array.from({ length: 100 }, (_, n) => ({ n })),
    );
    const rs = await store.client.query({
      query: `SELECT n FROM ${store.database}.${table} WHERE n < {below:UInt32} ORDER BY n`,
      query_params: { below: 3 },
      format: 'JSON',
    });
    const body = await rs.json<{ n: number }>();
    expect({ meta: body.meta, data: body.data }).toEqual({
      meta: [{ name: 'n', type: 'UInt32' }],
      data: [{ n: 0 }, { n: 1 }, { n: 2 }],
    });
    const streamed: number[] = [];
    const rows = await store.client.query({
      query: `SELECT n FROM ${store.database}.${table} ORDER BY n`,
      format: 'JSONEachRow',
    });
    for await (const batch of rows.stream<{ n: number }>()) for (const r of batch) streamed.push(r.json().n);
    expect(streamed).toEqual(Array.from({ length: 100 }, (_, n) => n));
  });

  it('runs ad-hoc SQL read-only on its own connection on the thread, leaving the store writable', async () => {
    const table = await freshTable('k String, n UInt64');
    await store.insertJson(table, [{ k: 'a', n: 1 }]);
    expect(await store.readOnlyQuery(`SELECT k, n FROM ${table}`)).toEqual({
      columns: ['k', 'n'],
      rows: [{ k: 'a', n: '1' }],
    });
    await expect(store.readOnlyQuery(`INSERT INTO ${table} VALUES ('b', 2)`)).rejects.toMatchObject({
      code: 'STORE_QUERY_FAILED',
      message: expect.stringMatching(/READONLY/),
    });
    await store.insertJson(table, [{ k: 'c', n: 3 }]);
    expect(await count(table)).toBe(2);
  });

  it('backs up a database into its backup directory only', async () => {
    const table = await freshTable('n UInt32');
    await store.insertJson(table, [{ n: 7 }]);
    await store.backupDatabase(join(dataDir, 'backup-staging', randomName('b')));
    await expect(store.backupDatabase(join(tmpdir(), randomName('elsewhere')))).rejects.toThrow(/not allowed/);
  });
});
