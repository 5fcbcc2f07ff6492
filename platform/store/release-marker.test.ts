/**
 * The database's release marker (release-marker.ts) through migrate(), on real embedded ClickHouse: a database a
 * newer release has made require a newer hooklog is refused by this one before it writes anything, naming both
 * versions; a newer release that stays compatible is run beside; old, new, old, new loses nothing.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { randomName } from '../../test/support/wait.js';
import { silentLogger } from '../log.js';
import { currentRelease, type ReleaseFacts } from '../release/current.js';
import { HOOKLOG_VERSION } from '../release/release.js';
import { defaultMigrationsDir, migrate } from './migrate.js';
import { openStore, type Store } from './store.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-release-marker-'));
const scratch = mkdtempSync(join(tmpdir(), 'hooklog-release-migrations-'));
const stores: Store[] = [];
const log = silentLogger();

afterAll(async () => {
  for (const s of stores) await s.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

function fresh(): Store {
  const store = openStore({ database: randomName('rel'), dataDir, logger: log });
  stores.push(store);
  return store;
}

/** What a future release 0.9.0 ships: this release's migrations and one more, contracting a table. */
function futureMigrations(): string {
  const dir = join(scratch, randomName('m'));
  cpSync(defaultMigrationsDir(), dir, { recursive: true });
  writeFileSync(
    join(dir, '900_future_contract.sql'),
    'CREATE TABLE IF NOT EXISTS {db}.future_only (x UInt8) ENGINE = MergeTree ORDER BY x;\n',
  );
  return dir;
}

const now = currentRelease();
const future = (requires: string): ReleaseFacts => ({
  ...now,
  version: '0.9.0',
  oldestCompatible: requires,
  schema: 900,
});

/** Everything a start could write: each table with its row count, the marker's and migrations' rows unfolded. */
async function snapshot(store: Store) {
  const db = store.database;
  return {
    tables: await store.query(
      `SELECT name, engine, total_rows FROM system.tables WHERE database = {db:String} ORDER BY name`,
      { db },
    ),
    versions: await store.query(
      `SELECT version, requires, started_at FROM ${db}.hooklog_versions ORDER BY version, started_at`,
    ),
    migrations: await store.query(
      `SELECT version, applied_at FROM ${db}.schema_migrations ORDER BY version, applied_at`,
    ),
    events: await store.query(`SELECT uuid FROM ${db}.events ORDER BY uuid`),
  };
}

async function writeEvent(store: Store, uuid: string) {
  await store.command(
    `INSERT INTO ${store.database}.events_v4_input (org, uuid, published, event_type, raw) VALUES ('org-1', {u:String}, now64(3), 'user.session.start', '{}')`,
    { u: uuid },
  );
}

describe('the database release marker', () => {
  it('records each release that migrated the database, and what it requires', async () => {
    const store = fresh();
    await migrate(store, log);
    const rows = await store.query<{ version: string; requires: string; schema: number }>(
      `SELECT version, requires, schema FROM ${store.database}.hooklog_versions FINAL`,
    );
    expect(rows).toEqual([{ version: HOOKLOG_VERSION, requires: now.oldestCompatible, schema: now.schema }]);
  }, 120_000);

  it('old, new, old, new: the second old start is refused before it writes anything, and nothing is lost', async () => {
    const store = fresh();
    const newer = futureMigrations();
    await migrate(store, log); // old
    await writeEvent(store, 'e-old-1');
    await migrate(store, log, { dir: newer, release: future('0.9.0') }); // new: contracts, so needs itself
    await writeEvent(store, 'e-new-1');
    const before = await snapshot(store);
    const refused = migrate(store, log); // old again
    await expect(refused).rejects.toMatchObject({ code: 'RELEASE_REFUSED' });
    await expect(refused).rejects.toThrow(
      new RegExp(
        `migrated by hooklog 0\\.9\\.0, which needs hooklog 0\\.9\\.0 or later.*this is hooklog ${HOOKLOG_VERSION.replaceAll('.', '\\.')}`,
      ),
    );
    expect(await snapshot(store)).toEqual(before);
    expect((await migrate(store, log, { dir: newer, release: future('0.9.0') })).applied).toEqual([]); // new again
    const events = await store.query<{ uuid: string }>(`SELECT uuid FROM ${store.database}.events ORDER BY uuid`);
    expect(events.map((e) => e.uuid)).toEqual(['e-new-1', 'e-old-1']);
  }, 120_000);

  it('runs beside a newer release that stays compatible (expand, not contract): the rolling upgrade', async () => {
    const store = fresh();
    const newer = futureMigrations();
    await migrate(store, log);
    await migrate(store, log, { dir: newer, release: future(HOOKLOG_VERSION) });
    expect((await migrate(store, log)).applied).toEqual([]);
    // The newer release's requirement stands: this start does not lower it.
    const rows = await store.query<{ version: string; requires: string }>(
      `SELECT version, requires FROM ${store.database}.hooklog_versions FINAL ORDER BY version`,
    );
    expect(rows).toEqual([
      { version: HOOKLOG_VERSION, requires: now.oldestCompatible },
      { version: '0.9.0', requires: HOOKLOG_VERSION },
    ]);
  }, 120_000);
});
