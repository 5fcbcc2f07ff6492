/**
 * Migrations against real embedded ClickHouse (chdb): the shipped files, and
 * copies of them in a temporary directory when a test edits or adds files.
 */
import { appendFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { randomName } from '../../test/support/wait.js';
import { silentLogger } from '../log.js';
import { defaultMigrationsDir, loadMigrations, migrate, renderStatement, splitStatements } from './migrate.js';
import { openStore, type Store } from './store.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-migrate-'));
const scratch = mkdtempSync(join(tmpdir(), 'hooklog-migrations-'));
const stores: Store[] = [];
const log = silentLogger();

function fresh(): Store {
  const store = openStore({ database: randomName('mig'), dataDir, logger: log });
  stores.push(store);
  return store;
}

/** A private copy of the shipped migrations that a test may edit. */
function copyOfMigrations(): string {
  const dir = join(scratch, randomName('m'));
  cpSync(defaultMigrationsDir(), dir, { recursive: true });
  return dir;
}

afterAll(async () => {
  for (const s of stores) await s.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

describe('splitStatements', () => {
  it('splits at lines ending in ";" and ignores comment-only chunks', () => {
    const sql = [
      '-- header; with a semicolon;',
      'CREATE TABLE a',
      '(x UInt8);',
      '',
      '-- only a comment',
      'ALTER TABLE a',
      '  ADD COLUMN IF NOT EXISTS y String ;  ',
      '-- trailing;',
    ].join('\n');
    expect(splitStatements(sql)).toEqual([
      '-- header; with a semicolon;\nCREATE TABLE a\n(x UInt8)',
      '-- only a comment\nALTER TABLE a\n  ADD COLUMN IF NOT EXISTS y String',
    ]);
  });

  it('keeps a last statement without a semicolon, and semicolons inside a line', () => {
    expect(splitStatements("SELECT ';' AS s; SELECT 2\nSELECT 3")).toEqual(["SELECT ';' AS s; SELECT 2\nSELECT 3"]);
  });

  it('substitutes every {db}', () => {
    expect(renderStatement('CREATE TABLE {db}.a AS {db}.b', 'hl')).toBe('CREATE TABLE hl.a AS hl.b');
  });

  it('finds the shipped migrations in version order with stable checksums', () => {
    const ms = loadMigrations(defaultMigrationsDir());
    expect(ms.map((m) => m.file).slice(0, 2)).toEqual(['001_events.sql', '002_deadletter.sql']);
    expect(ms.every((m) => /^[0-9a-f]{64}$/.test(m.checksum) && m.statements.length > 0)).toBe(true);
    expect(ms.every((m) => m.statements.every((s) => s.includes('{db}.')))).toBe(true);
  });

  it('refuses two files with the same version', () => {
    const dir = copyOfMigrations();
    writeFileSync(join(dir, '001_other.sql'), 'SELECT 1;\n');
    expect(() => loadMigrations(dir)).toThrow(/share version 1/);
  });
});

describe('migrate (embedded chdb)', () => {
  it('applies every file once, records it, and a second run applies nothing', async () => {
    const store = fresh();
    const first = await migrate(store, log);
    expect(first.applied).toEqual(loadMigrations(defaultMigrationsDir()).map((m) => m.file));
    const rows = await store.query<{ version: number; name: string; checksum: string; applied_at: string }>(
      `SELECT version, name, checksum, applied_at FROM ${store.database}.schema_migrations FINAL ORDER BY version`,
    );
    const expected = loadMigrations(defaultMigrationsDir());
    expect(rows.map((r) => [r.version, r.name, r.checksum])).toEqual(
      expected.map((m) => [m.version, m.name, m.checksum]),
    );
    expect(rows.every((r) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/.test(r.applied_at))).toBe(true);

    const second = await migrate(store, log);
    expect(second.applied).toEqual([]);
    const [n] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.schema_migrations`);
    expect(n!.n).toBe(String(expected.length));
  });

  it('creates the events table as designed (v4, 032): AggregatingMergeTree by (org, event_type, published, uuid), daily partitions merged whole once closed, dedup window, optional columns Nullable, `events` a FINAL view', async () => {
    const store = fresh();
    await migrate(store, log);
    const [t] = await store.query<{
      engine: string;
      sorting_key: string;
      partition_key: string;
      create_table_query: string;
    }>(
      `SELECT engine, sorting_key, partition_key, create_table_query FROM system.tables WHERE database = {db:String} AND name = {t:String}`,
      { db: store.database, t: EVENTS_TABLE },
    );
    expect(t).toMatchObject({
      engine: 'AggregatingMergeTree',
      sorting_key: 'org, event_type, published, uuid',
      partition_key: 'toYYYYMMDD(published)',
    });
    const [view] = await store.query<{ engine: string; as_select: string }>(
      `SELECT engine, as_select FROM system.tables WHERE database = {db:String} AND name = 'events'`,
      { db: store.database },
    );
    expect(view).toMatchObject({ engine: 'View', as_select: expect.stringMatching(/FROM \w+\.events_v4 FINAL/) });
    expect(t!.create_table_query).toMatch(/non_replicated_deduplication_window = 10000/);
    // 032: a closed day is merged whole an hour after its last write (FINAL then reads it without merging).
    expect(t!.create_table_query).toMatch(
      /min_age_to_force_merge_seconds = 3600, min_age_to_force_merge_on_partition_only = 1/,
    );
    // 013: a set index of event types per granule, for queries over every org (org=*).
    const indices = await store.query<{ name: string; expr: string; type_full: string }>(
      `SELECT name, expr, type_full FROM system.data_skipping_indices WHERE database = {db:String} AND table = {t:String}`,
      { db: store.database, t: EVENTS_TABLE },
    );
    expect(indices).toEqual([{ name: 'event_type_set', expr: 'event_type', type_full: 'set(256)' }]);
    // 013: the sink's way in, a Null table of the same columns and its view into the events table.
    const [input] = await store.query<{ engine: string }>(
      `SELECT engine FROM system.tables WHERE database = {db:String} AND name = {t:String}`,
      { db: store.database, t: `${EVENTS_TABLE}_input` },
    );
    expect(input).toEqual({ engine: 'Null' });
    const cols = await store.query<{ name: string; type: string }>(
      `SELECT name, type FROM system.columns WHERE database = {db:String} AND table = {t:String}`,
      { db: store.database, t: EVENTS_TABLE },
    );
    const types = Object.fromEntries(cols.map((c) => [c.name, c.type]));
    expect(types).toMatchObject({
      uuid: 'String',
      published: "DateTime64(3, 'UTC')",
      geo_lat: 'SimpleAggregateFunction(anyLast, Nullable(Float64))',
      geo_postal_code: 'SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String)))',
      client_ip: 'SimpleAggregateFunction(anyLast, Nullable(String))',
      is_proxy: 'SimpleAggregateFunction(anyLast, Nullable(Bool))',
      raw: 'SimpleAggregateFunction(any, String)',
      target_id: 'SimpleAggregateFunction(max, Array(String))',
      received_at: "SimpleAggregateFunction(min, DateTime64(3, 'UTC'))",
    });
    const [dl] = await store.query<{ engine: string }>(
      `SELECT engine FROM system.tables WHERE database = {db:String} AND name = 'deadletter'`,
      { db: store.database },
    );
    expect(dl!.engine).toBe('ReplacingMergeTree');
  });

  it('refuses to start when an applied file changed, naming the file', async () => {
    const store = fresh();
    const dir = copyOfMigrations();
    await migrate(store, log, { dir });
    appendFileSync(join(dir, '002_deadletter.sql'), '\n-- an innocent-looking edit\n');
    await expect(migrate(store, log, { dir })).rejects.toMatchObject({
      code: 'MIGRATION_FAILED',
      message: expect.stringContaining('002_deadletter.sql'),
    });
  });

  it('applies only the new file when one is added later', async () => {
    const store = fresh();
    const dir = copyOfMigrations();
    await migrate(store, log, { dir });
    writeFileSync(
      join(dir, '900_extra.sql'),
      "ALTER TABLE {db}.events_v2\n  ADD COLUMN IF NOT EXISTS extra String DEFAULT '';\nCREATE TABLE IF NOT EXISTS {db}.extra (x UInt8) ENGINE = MergeTree ORDER BY x;\n",
    );
    expect((await migrate(store, log, { dir })).applied).toEqual(['900_extra.sql']);
    const [row] = await store.query<{ n: string }>(
      `SELECT count() AS n FROM system.columns WHERE database = {db:String} AND table = 'events_v2' AND name = 'extra'`,
      { db: store.database },
    );
    expect(row!.n).toBe('1');
  });

  it('names the file and statement that failed, and records nothing for it', async () => {
    const store = fresh();
    const dir = copyOfMigrations();
    writeFileSync(
      join(dir, '900_broken.sql'),
      'CREATE TABLE IF NOT EXISTS {db}.ok (x UInt8) ENGINE = MergeTree ORDER BY x;\nCREATE TABLE {db}.broken (x NoSuchType) ENGINE = MergeTree ORDER BY x;\n',
    );
    await expect(migrate(store, log, { dir })).rejects.toMatchObject({
      code: 'MIGRATION_FAILED',
      message: expect.stringMatching(/900_broken\.sql, statement 2/),
    });
    const rows = await store.query<{ version: number }>(
      `SELECT version FROM ${store.database}.schema_migrations FINAL`,
    );
    expect(rows.map((r) => r.version)).not.toContain(900);
  });

  it('survives two migrations of the same database running at once', async () => {
    const a = fresh();
    const b = openStore({ database: a.database, dataDir, logger: log });
    stores.push(b);
    const [ra, rb] = await Promise.all([migrate(a, log), migrate(b, log)]);
    expect(ra.applied.length + rb.applied.length).toBeGreaterThanOrEqual(loadMigrations(defaultMigrationsDir()).length);
    const rows = await a.query<{ version: number }>(
      `SELECT version FROM ${a.database}.schema_migrations FINAL ORDER BY version`,
    );
    expect(rows.map((r) => r.version)).toEqual(loadMigrations(defaultMigrationsDir()).map((m) => m.version));
    expect((await migrate(a, log)).applied).toEqual([]);
  });
});
