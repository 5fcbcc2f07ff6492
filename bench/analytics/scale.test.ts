/**
 * The analytics bench's data as scale.ts makes it: every copy of every base org the same events day by day, each
 * copy its own uuids (in the column and in `raw`) and people, every day one merged part written with the table's
 * own codecs, and a stopped or grown build finished without a row made twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { resetUuids, type GenOptions } from './generate.js';
import { plant } from './plants.js';
import { daysFolded, scaleUp } from './scale.js';

const GEN: GenOptions = {
  orgs: 2,
  usersPerOrg: 40,
  days: 3,
  eventsPerUserPerDay: 4,
  start: new Date('2026-01-05T00:00:00Z'),
  seed: 5,
};

let store: Store | undefined;
let dir: string | undefined;
afterEach(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  store = undefined;
  dir = undefined;
});

/** An empty migrated store in a directory of its own, removed after the test (the data is a few MB). */
async function migratedStore(): Promise<Store> {
  dir = mkdtempSync(join(tmpdir(), 'hooklog-scale-'));
  const s = openStore({ database: 'bench', dataDir: dir, logger: silentLogger() });
  await migrate(s, silentLogger());
  return s;
}

async function build(s: Store, orgs: number, lines: string[] = []) {
  resetUuids(3);
  return scaleUp(s, { gen: GEN, orgs, plants: plant(GEN), say: (l) => lines.push(l), fold: true });
}

/** Events per (org, day), the copies' orgs named by their base org and copy number. */
async function perOrgDay(s: Store) {
  return s.query<{ base: string; copy: string; day: string; n: string }>(
    `SELECT replaceRegexpOne(org, '-c[0-9]+$', '') AS base, extract(org, '-c([0-9]+)$') AS copy,
            toString(toYYYYMMDD(published)) AS day, toString(count()) AS n
     FROM ${s.database}.${EVENTS_TABLE} GROUP BY base, copy, day ORDER BY base, day, copy`,
  );
}

/** Asserts that copies 1..`copies` of each base org hold exactly its events on every day, and nothing else. */
async function expectCopies(s: Store, copies: number) {
  const rows = await perOrgDay(s);
  const base = rows.filter((r) => r.copy === '');
  expect(base.length).toBe(GEN.orgs * GEN.days);
  for (const b of base) {
    const of = rows.filter((r) => r.base === b.base && r.day === b.day && r.copy !== '');
    expect(of.map((r) => [Number(r.copy), r.n])).toEqual(Array.from({ length: copies }, (_, k) => [k + 1, b.n]));
  }
  expect(rows.length).toBe(base.length * (copies + 1));
}

describe('scaleUp', () => {
  it('copies every base org a day at a time, each copy its own uuids and people, every day one merged part', async () => {
    store = await migratedStore();
    const made = await build(store, 6);
    await expectCopies(store, 2);
    const db = store.database;
    const [c] = await store.query<{ rows: string; uuids: string; rawOff: string; actorOff: string; codec: string }>(
      `SELECT toString(count()) AS rows, toString(uniqExact(uuid)) AS uuids,
              toString(countIf(JSONExtractString(raw, 'uuid') != uuid)) AS rawOff,
              toString(countIf(org LIKE '%-c%' AND actor_id NOT IN ('', 'unknown')
                               AND NOT endsWith(actor_id, concat('-c', extract(org, '-c([0-9]+)$'))))) AS actorOff,
              (SELECT compression_codec FROM system.columns
               WHERE database = '${db}' AND table = '${EVENTS_TABLE}' AND name = 'raw') AS codec
       FROM ${db}.${EVENTS_TABLE}`,
    );
    expect(Number(c!.rows)).toBe(made.events);
    // One uuid is planted on two events of the attacked org (reused_uuids); every copy's rows get uuids of their own.
    expect(Number(c!.rows) - Number(c!.uuids)).toBe(1);
    expect(c!.rawOff).toBe('0');
    expect(c!.actorOff).toBe('0');
    // Written with the table's own codec, whatever the copies were written with (migration 032).
    expect(c!.codec).toBe('CODEC(ZSTD(6))');
    expect(await daysFolded(store)).toEqual({ folded: GEN.days, unfolded: 0 });
  });

  it('finishes a half-made day without a row twice, grows by more copies, and redoes nothing finished', async () => {
    store = await migratedStore();
    await build(store, 4);
    await expectCopies(store, 1);
    const db = store.database;
    // A run stopped part-way through a day of copy 2: some of its rows written, the day's step not recorded.
    await store.command(
      `INSERT INTO ${db}.${EVENTS_TABLE} SELECT * REPLACE (concat(org, '-c2') AS org)
       FROM ${db}.${EVENTS_TABLE} WHERE org = 'acme' AND toYYYYMMDD(published) = 20260106 LIMIT 10`,
    );
    const lines: string[] = [];
    const grown = await build(store, 6, lines);
    await expectCopies(store, 2);
    expect(lines.filter((l) => l.startsWith('  copies: day'))).toHaveLength(GEN.days);
    expect(grown.seconds.base).toBe(0);
    expect(await daysFolded(store)).toEqual({ folded: GEN.days, unfolded: 0 });

    const again: string[] = [];
    const rerun = await build(store, 6, again);
    expect(again).toEqual([]);
    expect(rerun.events).toBe(grown.events);
  });
});
