/**
 * Every named query over every org (`org=*`) as it runs now (events_v4's daily partitions, a closed day one
 * merged part that FINAL reads without merging; the all-orgs form of a query that narrows its rows first)
 * against the form it replaced (the one-org SQL with its org condition lifted), in real embedded ClickHouse
 * over data made to differ where the two could: copies of events in other parts carrying other or no values
 * (an outcome turned to FAILURE, a user, an address or a country gone), uuids reused within and across orgs,
 * failed sign-ins of a user with no name, three orgs, one day folded and the others holding unfolded copies.
 *
 * Equal means the same rows with the same values. Two kinds of value are samples, whichever form runs:
 * `any(x)` (one of the group's values) and `groupUniqArray(N)(x)` (up to N of its distinct values, which N of
 * them depends on reading order); for those, the number of values is compared, not which. Arrays are
 * compared as sets of values (groupArray's order is reading order too).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../platform/store/index.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import { ALL_ORGS, allParams, ORG_MATCH, type NamedQuery } from './query.js';
import { QUERIES } from './registry.js';
import { parseParams } from './params.js';
import { runNamedQuery, type QueryResult } from './run.js';
import { loadedStore, RANGE } from './testing.js';

let store: Store;
const FOLDED_DAY = '20260105';
const table = () => `${store.database}.${EVENTS_TABLE}`;

/**
 * Folds one day while background merges are otherwise stopped, so that the other days keep their copies
 * unfolded for as long as the tests run (a background merge could fold them at any moment).
 */
async function foldDay(day: string): Promise<void> {
  await store.command(`SYSTEM START MERGES ${table()}`);
  try {
    await store.command(`OPTIMIZE TABLE ${table()} PARTITION ${day} FINAL`);
  } finally {
    await store.command(`SYSTEM STOP MERGES ${table()}`);
  }
}

beforeAll(async () => {
  ({ store } = await loadedStore());
  const t = table();
  await store.command(`SYSTEM STOP MERGES ${t}`);
  const cols = (
    await store.query<{ name: string }>(
      'SELECT name FROM system.columns WHERE database = {db:String} AND table = {t:String} ORDER BY position',
      { db: store.database, t: EVENTS_TABLE },
    )
  ).map((c) => c.name);
  const copy = (changes: Record<string, string>, where: string) =>
    store.command(
      `INSERT INTO ${t} (${cols.join(', ')}) SELECT ${cols.map((c) => (changes[c] ? `${changes[c]} AS ${c}` : c)).join(', ')}
       FROM ${t} WHERE ${where} SETTINGS insert_deduplicate = 0`,
    );
  // Copies in parts of their own: a newer copy's known value wins, its NULLs keep the older copy's values.
  await copy({ outcome_result: "'FAILURE'", outcome_reason: "'VERIFICATION_ERROR'" }, 'cityHash64(uuid) % 7 = 0');
  await copy(
    { client_ip: 'NULL', geo_country: 'NULL', actor_alternate_id: 'NULL', ingested_at: 'now64(3)' },
    'cityHash64(uuid) % 5 = 1',
  );
  await copy({ geo_country: "'Atlantis'", geo_city: "'Atlantis'", as_number: '64512' }, 'cityHash64(uuid) % 11 = 2');
  // Uuids reused across orgs and event types: other events, not copies.
  await copy(
    { org: "concat(org, '-twin')", event_type: "'user.session.end'", published: 'published + 1' },
    'cityHash64(uuid) % 13 = 3',
  );
  // A user with no name failing sign-ins in bursts (brute_force's NULL group), in every day.
  await copy(
    { actor_alternate_id: 'NULL', outcome_result: "'FAILURE'", uuid: "concat(uuid, '-anon')" },
    "event_type = 'user.session.start' AND cityHash64(uuid) % 3 = 0",
  );
  await foldDay(FOLDED_DAY);
}, 180_000);

afterAll(async () => {
  await store?.close();
});

/** The form the all-orgs query replaced: the one-org SQL, its org condition lifted, every event read with FINAL. */
async function reference(q: NamedQuery, raw: Record<string, string>): Promise<QueryResult> {
  const params = parseParams(allParams(q), raw);
  const sql = q.sql.replaceAll(ORG_MATCH, '1 = 1').replaceAll('{db}', store.database);
  const rs = await store.client.query({ query: sql, query_params: params, format: 'JSON' });
  const body = await rs.json<Record<string, unknown>>();
  return { columns: body.meta?.map((m) => m.name) ?? [], rows: body.data };
}

/**
 * Columns whose values are samples (`any`, capped `groupUniqArray` of values or of arrays): their size is compared, not
 * their values.
 */
function sampleColumns(q: NamedQuery): Set<string> {
  const sql = q.allOrgsSql ?? q.sql;
  return new Set(
    [...sql.matchAll(/\b(any|groupUniqArray(?:If|Array)?\(\d+\))\((?:[^()]|\([^()]*\))*\)\s+AS\s+(\w+)/g)].map(
      (m) => m[2]!,
    ),
  );
}

function normalise(rows: Array<Record<string, unknown>>, samples: Set<string>): string[] {
  const value = (k: string, v: unknown): unknown => {
    if (samples.has(k)) return Array.isArray(v) ? `${v.length} values` : 'a sample';
    return Array.isArray(v) ? v.map((x) => JSON.stringify(x)).sort() : v;
  };
  return rows
    .map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, value(k, v)]))))
    .sort();
}

/** The second day of the data: `since` for a query with a baseline, so that the day before holds its baseline. */
const SECOND_DAY = new Date(Date.parse(RANGE.since) + 86_400_000).toISOString();

/**
 * Each query with its defaults, with every bounded parameter at its least (more groups pass), and a query with a
 * baseline from the second day on, its baseline the first (from the first day on, its baseline is empty).
 */
function paramSets(q: NamedQuery): Array<Record<string, string>> {
  const least = Object.fromEntries(q.params.filter((p) => p.min !== undefined).map((p) => [p.name, String(p.min)]));
  const sets: Array<Record<string, string>> = [{}];
  if (Object.keys(least).length > 0) sets.push(least);
  if (q.params.some((p) => p.name === 'baseline_days')) sets.push({ since: SECOND_DAY, baseline_days: '1' });
  return sets;
}

describe('the data the forms are compared on', () => {
  it('has a day folded into one merged part and days whose copies only FINAL folds', async () => {
    const days = await store.query<{ day: string; parts: string; level: number }>(
      `SELECT partition_id AS day, count() AS parts, min(level) AS level FROM system.parts
       WHERE database = {db:String} AND table = {t:String} AND active GROUP BY day ORDER BY day`,
      { db: store.database, t: EVENTS_TABLE },
    );
    expect(days.find((d) => d.day === FOLDED_DAY)).toMatchObject({ parts: '1' });
    expect(days.find((d) => d.day === FOLDED_DAY)!.level).toBeGreaterThan(0);
    const [unfolded] = await store.query<{ rows: string; events: string }>(
      `SELECT (SELECT count() FROM ${table()} WHERE _partition_id != {d:String}) AS rows,
              (SELECT count() FROM ${table()} FINAL WHERE _partition_id != {d:String}) AS events`,
      { d: FOLDED_DAY },
    );
    expect(Number(unfolded!.rows)).toBeGreaterThan(Number(unfolded!.events));
  });
});

describe.each(QUERIES.map((q) => [q.name, q] as const))('%s over every org', (_name, q) => {
  it('returns what every org read with FINAL returned', async () => {
    const samples = sampleColumns(q);
    let answered = 0;
    for (const extra of paramSets(q)) {
      const raw = { org: ALL_ORGS, ...RANGE, limit: '10000', ...extra };
      const [now, before] = [await runNamedQuery(store, q.name, raw), await reference(q, raw)];
      expect(now.columns).toEqual(before.columns);
      expect(normalise(now.rows, samples), JSON.stringify(extra)).toEqual(normalise(before.rows, samples));
      // With a baseline that holds events, the first-seen queries have sign-ins to agree on (else equal says nothing).
      if (extra.since) expect(before.rows.length, q.name).toBeGreaterThan(0);
      answered += before.rows.length;
    }
    // A form of its own over every org agrees on rows that exist (the planted attacks), not only on none.
    if (q.allOrgsSql) expect(answered, q.name).toBeGreaterThan(0);
  });
});
