/**
 * schemas/clickhouse/032_events_daily.sql against real embedded ClickHouse: a store at 031 whose events_v3
 * holds events and unfolded copies of some of them is migrated, and events_v4 (one partition per day) holds
 * every event once with the values events_v3 folded to, and arrivals as they were (the copy feeds no arrivals
 * view); running the file's statements again changes nothing, and the sink's way in now reaches events_v4,
 * whose arrivals view counts what arrives from then on.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { backgroundEvents, resetUuids } from '../bench/analytics/generate.js';
import { insertChunk } from '../bench/analytics/load.js';
import { silentLogger } from '../platform/log.js';
import { defaultMigrationsDir, loadMigrations, migrate, openStore, renderStatement } from '../platform/store/index.js';
import { randomName } from '../test/support/wait.js';
import { EVENTS_TABLE } from '../schemas/tables.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-v4-'));
const store = openStore({ database: randomName('v3to4'), dataDir, logger: silentLogger() });
const db = store.database;

afterAll(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const ENRICHMENT_INPUT_COLUMNS = [
  'enrichment_country Nullable(String)',
  'enrichment_city Nullable(String)',
  'enrichment_lat Nullable(Float64)',
  'enrichment_lon Nullable(Float64)',
  'enrichment_as_number Nullable(UInt32)',
  'enrichment_as_org Nullable(String)',
];

// v4's later columns (037's enrichment, NULL for every event carried over) are not v3's to compare.
const folded = (table: string) =>
  store.query<Record<string, unknown>>(
    `SELECT * EXCEPT (${ENRICHMENT_INPUT_COLUMNS.map((c) => c.split(' ')[0]).join(', ')}) FROM ${db}.${table} FINAL ORDER BY org, event_type, published, uuid`.replace(
      table === 'events_v3' ? / EXCEPT \([^)]*\)/ : /^$/,
      '',
    ),
  );

describe('v3 → v4 (032_events_daily.sql)', () => {
  it('carries every event over, folded as before, into daily partitions; safe to run again', async () => {
    const dir = join(dataDir, 'v3-migrations');
    cpSync(defaultMigrationsDir(), dir, { recursive: true });
    for (const m of loadMigrations(dir)) if (m.version >= 32) rmSync(join(dir, m.file));
    await migrate(store, silentLogger(), { dir });

    // The generator writes today's input columns: it loads into a table of v3's plus the later ones (037's
    // enrichment), from which v3's way in takes the columns it has.
    await store.command(
      `CREATE TABLE ${db}.v3load_input ENGINE = Memory AS SELECT * FROM ${db}.events_v3_input WHERE 0`,
    );
    await store.command(
      `ALTER TABLE ${db}.v3load_input ${ENRICHMENT_INPUT_COLUMNS.map((c) => `ADD COLUMN ${c}`).join(', ')}`,
    );
    const load = async (chunk: NonNullable<typeof events>) => {
      await insertChunk(store, chunk, 'v3load');
      const later = ENRICHMENT_INPUT_COLUMNS.map((c) => c.split(' ')[0]).join(', ');
      await store.command(`INSERT INTO ${db}.events_v3_input SELECT * EXCEPT (${later}) FROM ${db}.v3load_input`);
      await store.command(`TRUNCATE TABLE ${db}.v3load_input`);
    };
    resetUuids(3);
    const opts = { orgs: 2, usersPerOrg: 5, days: 3, eventsPerUserPerDay: 4, start: new Date('2026-03-30T00:00:00Z') };
    const [events] = [...backgroundEvents(opts, [], undefined, 100_000)];
    await load(events!);
    // Copies in a part of their own, some with an outcome the first copy did not have.
    await load(events!.slice(0, 40));
    await store.command(
      `INSERT INTO ${db}.events_v3 SELECT * REPLACE ('FAILURE' AS outcome_result) FROM ${db}.events_v3 WHERE cityHash64(uuid) % 4 = 0 SETTINGS insert_deduplicate = 0`,
    );
    // Events that came by a hook: v3's arrivals view (031) wrote their arrivals.
    await store.command(
      `INSERT INTO ${db}.events_v3 SELECT * REPLACE ('hook' AS source, concat(uuid, 'h') AS uuid) FROM ${db}.events_v3 WHERE cityHash64(uuid) % 3 = 0 SETTINGS insert_deduplicate = 0`,
    );
    const before = await folded('events_v3');
    const hooked = before.filter((e) => e.source === 'hook').length;
    expect(hooked).toBeGreaterThan(0);
    expect(before).toHaveLength(events!.length + hooked);
    const arrivals = () =>
      store.query<Record<string, unknown>>(
        `SELECT org, uuid, path, toString(sum(copies)) AS copies FROM ${db}.arrivals GROUP BY org, uuid, path ORDER BY org, uuid, path`,
      );
    const arrivalsBefore = await arrivals();
    expect(arrivalsBefore.length).toBeGreaterThan(0);

    // Up to 032 and again (as after a crash in it, before any later migration ran), then every later one.
    const to032 = join(dataDir, 'to-032-migrations');
    cpSync(defaultMigrationsDir(), to032, { recursive: true });
    for (const m of loadMigrations(to032)) if (m.version > 32) rmSync(join(to032, m.file));
    await migrate(store, silentLogger(), { dir: to032 });
    expect(EVENTS_TABLE).toBe('events_v4');
    expect(await folded('events_v4')).toEqual(before);
    const days = await store.query<{ p: string }>(
      `SELECT DISTINCT partition_id AS p FROM system.parts WHERE database = {db:String} AND table = 'events_v4' AND active ORDER BY p`,
      { db },
    );
    expect(days.map((d) => d.p)).toEqual(['20260330', '20260331', '20260401']);

    const [file] = loadMigrations(defaultMigrationsDir()).filter((m) => m.version === 32);
    for (const s of file!.statements) await store.command(renderStatement(s, db));
    expect(await folded('events_v4')).toEqual(before);
    // The copied events already had their arrivals: neither the copy nor its second run counts them again.
    expect(await arrivals()).toEqual(arrivalsBefore);
    await migrate(store, silentLogger());
    expect(await folded('events_v4')).toEqual(before);
    const [view] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${db}.events`);
    expect(Number(view!.n)).toBe(before.length);

    // The sink's input now leads to events_v4 (and no longer to the copy's source).
    const [late] = [
      ...backgroundEvents({ ...opts, start: new Date('2026-04-05T00:00:00Z'), seed: 9 }, [], undefined, 10),
    ];
    await insertChunk(store, late!);
    const [v4] = await store.query<{ n: string }>(
      `SELECT count() AS n FROM ${db}.events_v4 FINAL WHERE published >= '2026-04-05'`,
    );
    const [v3] = await store.query<{ n: string }>(
      `SELECT count() AS n FROM ${db}.events_v3 WHERE published >= '2026-04-05'`,
    );
    expect([Number(v4!.n), Number(v3!.n)]).toEqual([late!.length, 0]);
    // What reaches events_v4 by a delivery path from now on brings its arrivals (v4's view).
    await store.command(
      `INSERT INTO ${db}.events_v4 SELECT * REPLACE ('system-log' AS source) FROM ${db}.events_v4 WHERE published >= '2026-04-05' ORDER BY uuid LIMIT 1`,
    );
    const fresh = (await arrivals()).filter((a) => !arrivalsBefore.some((b) => b.uuid === a.uuid));
    expect(fresh).toEqual([expect.objectContaining({ path: 'system-log', copies: '1' })]);
  });
});
