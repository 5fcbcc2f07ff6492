/**
 * bench/analytics: the query library at provider scale. N events over M orgs in embedded ClickHouse, then
 * bytes per event on disk, the raw column as String vs the JSON type, and the median latency of every
 * named query for one org (the attacked one, over its whole range) and for all orgs at once (org=*).
 *
 *   npx tsx bench/analytics/run.ts [--events 100000000] [--orgs 1000] [--base-orgs 10] [--users 500]
 *        [--days 30] [--runs 5] [--data-dir DIR] [--merge wait|final|none] [--raw-sample 200000] [--data-only]
 *
 * The data (scale.ts): --base-orgs orgs of events/orgs events each are generated in JavaScript and written
 * through the sink's own path (event-tsv.ts, the input table and its view); copies made inside ClickHouse with
 * SQL, a day at a time (each every base org under a new name, fresh uuids in the column and in `raw`, its users,
 * sessions, transactions and targets renamed) bring the table to --orgs orgs; then every day is folded into one
 * merged part, as it is an hour after its last write in service. With --data-dir the data is kept and a later
 * run resumes where an earlier one stopped (each finished step is recorded in the database), or skips straight to
 * the measurements. The time each step took is printed (`made:`).
 * --merge: wait for background merges to settle (default), OPTIMIZE FINAL of any day not yet one merged part,
 * or none: no folding either, the parts measured as inserted.
 * --data-only: stop once the data is made and merged (the `disk:` line), as bench/search needs it.
 *
 * Baseline measured in the same run: a plain FINAL count of the org's events in range (one org), and of
 * every org's (all orgs). Query figures are medians of --runs runs after one warm-up.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore } from '../../platform/store/index.js';
import { QUERIES, findQuery } from '../../analytics/registry.js';
import { ALL_ORGS, ORG_MATCH, allParams } from '../../analytics/query.js';
import { parseParams } from '../../analytics/params.js';
import { FLOORS } from './floors.js';
import { resetUuids, type GenOptions } from './generate.js';
import { ATTACKED, plant } from './plants.js';
import { daysFolded, mergesSettled, restoreMergeAge, scaleUp } from './scale.js';
import { columnBytes, latency, queryLatency, tableBytes } from './measure.js';
import { compareRawStorage } from './raw-json.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const { values: a } = parseArgs({
  options: {
    events: { type: 'string', default: '100000000' },
    orgs: { type: 'string', default: '1000' },
    'base-orgs': { type: 'string', default: '10' },
    users: { type: 'string', default: '500' },
    days: { type: 'string', default: '30' },
    runs: { type: 'string', default: '5' },
    'data-dir': { type: 'string' },
    merge: { type: 'string', default: 'wait' },
    'raw-sample': { type: 'string', default: '200000' },
    'data-only': { type: 'boolean', default: false },
  },
  strict: true,
});
const positive = (name: string, v: string | undefined) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
};
const total = positive('events', a.events);
const allOrgs = positive('orgs', a.orgs);
const base = positive('base-orgs', a['base-orgs']);
if (allOrgs % base !== 0 || base < 2) throw new Error('--orgs must be a multiple of --base-orgs, which must be >= 2');
if (!['wait', 'final', 'none'].includes(a.merge!)) throw new Error('--merge is wait, final or none');
const users = positive('users', a.users);
const days = positive('days', a.days);
const opts: GenOptions = {
  orgs: base,
  usersPerOrg: users,
  days,
  // Every org the same size: events / orgs of them, spread over users and days.
  eventsPerUserPerDay: total / allOrgs / users / days,
  start: new Date('2026-01-05T00:00:00Z'),
  seed: 42,
};
const runs = positive('runs', a.runs);
const keep = a['data-dir'] !== undefined;
const dataDir = a['data-dir'] ?? mkdtempSync(join(tmpdir(), 'hooklog-bench-analytics-'));
mkdirSync(dataDir, { recursive: true });
const store = openStore({ database: 'bench', dataDir, logger: silentLogger() });
// A second connection to the same engine, for folding two days at once (scale.ts foldDays).
const second = createClient({
  connection: createChdbConnection({ path: join(dataDir, 'clickhouse') }) as unknown as NonNullable<
    Parameters<typeof createClient>[0]
  >['connection'],
});
const out = (s: string) => process.stdout.write(s + '\n');

try {
  const tStart = performance.now();
  await migrate(store, silentLogger());
  await restoreMergeAge(store);
  resetUuids(42);
  const plants = plant(opts);
  out(
    `# bench/analytics: ${(total / 1e6).toFixed(1)}M events over ${allOrgs} orgs (${users} users x ${days} days each, ${opts.eventsPerUserPerDay.toFixed(2)} events/user/day) + ${plants.events.length} planted in ${ATTACKED}; data in ${dataDir}${keep ? ' (kept)' : ''}`,
  );

  const made = await scaleUp(store, {
    gen: opts,
    orgs: allOrgs,
    plants,
    say: out,
    fold: a.merge !== 'none',
    second: (query) => second.command({ query }).then(() => undefined),
  });
  const events = made.events;
  const sec = made.seconds;
  const cpu = made.cpuSeconds;
  out(
    `data: ${events} events over ${allOrgs} orgs (${base} generated, ${allOrgs / base - 1} copies of them), ${Math.round(events / allOrgs)} per org; made in ${((performance.now() - tStart) / 1000).toFixed(0)} s this run`,
  );
  out(
    `made: base ${sec.base.toFixed(1)} s (CPU ${cpu.base.toFixed(1)} s), copies ${sec.copies.toFixed(1)} s (CPU ${cpu.copies.toFixed(1)} s), fold ${sec.fold.toFixed(1)} s (CPU ${cpu.fold.toFixed(1)} s); this run, 0 = done before; load ${loadavg()[0]!.toFixed(2)}`,
  );
  const beforeMerge = await tableBytes(store, EVENTS_TABLE);
  const tm = performance.now();
  const cm = process.cpuUsage();
  // The build folded every day already (unless --merge none made it leave them): OPTIMIZE FINAL would otherwise
  // rewrite each one-part day again, the whole table on one thread.
  if (a.merge === 'final')
    await store.command(
      `OPTIMIZE TABLE ${store.database}.${EVENTS_TABLE} FINAL SETTINGS optimize_skip_merged_partitions = 1`,
    );
  else if (a.merge === 'wait') await mergesSettled(store);
  const merged = await tableBytes(store, EVENTS_TABLE);
  const folded = await daysFolded(store);
  out(
    `disk: ${(beforeMerge.bytes / beforeMerge.rows).toFixed(1)} bytes/event before the --merge step (${beforeMerge.parts} parts); ${(merged.bytes / merged.rows).toFixed(1)} bytes/event measured on (${merged.parts} parts, ${folded.folded} of ${folded.folded + folded.unfolded} days folded into one part, after ${a.merge === 'none' ? 'no merge wait' : a.merge === 'final' ? 'OPTIMIZE FINAL' : 'background merges settled'}, ${((performance.now() - tm) / 1000).toFixed(0)} s, CPU ${cpuSince(cm).toFixed(0)} s); ${merged.rows} rows`,
  );
  if (!a['data-only']) await measure();
} finally {
  await second.close();
  await store.close();
  if (!keep) rmSync(dataDir, { recursive: true, force: true });
}

function cpuSince(from: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1e6;
}

/** Column sizes, raw storage and every query's latency, on the data as made. */
async function measure(): Promise<void> {
  const merged = await tableBytes(store, EVENTS_TABLE);
  const cols = await columnBytes(store, EVENTS_TABLE);
  const compressed = cols.reduce((s, c) => s + c.compressed, 0);
  out(
    'largest columns (compressed bytes/event, share): ' +
      cols
        .slice(0, 8)
        .map(
          (c) =>
            `${c.name} ${(c.compressed / merged.rows).toFixed(1)} (${((100 * c.compressed) / compressed).toFixed(0)}%)`,
        )
        .join(', '),
  );

  // Raw JSON storage: String with ZSTD levels vs the JSON type, on a sample.
  if (Number(a['raw-sample']) > 0)
    for (const line of await compareRawStorage(store, Number(a['raw-sample']))) out(line);

  // Query latency over the attacked org's whole range.
  const range = {
    org: ATTACKED,
    since: opts.start.toISOString(),
    until: new Date(opts.start.getTime() + opts.days * 86_400_000).toISOString(),
  };
  const day1 = new Date(opts.start.getTime() + 86_400_000).toISOString();
  const extra: Record<string, Record<string, string>> = {
    new_country_for_user: { since: day1, baseline_days: '1' },
    new_asn_for_user: { since: day1, baseline_days: '1' },
    event_volume_gaps: { max_events: '0' },
    factor_reset_before_privilege_grant: { window_minutes: '60' },
  };
  const countSql = (org: boolean) =>
    `SELECT count() FROM ${store.database}.${EVENTS_TABLE} FINAL WHERE ${org ? 'org = {org:String} AND ' : ''}published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')}`;
  const bounds = {
    since: range.since.replace('T', ' ').replace('Z', ''),
    until: range.until.replace('T', ' ').replace('Z', ''),
  };
  const baseOne = await latency(() => store.query(countSql(true), { org: range.org, ...bounds }), runs);
  const baseAll = await latency(() => store.query(countSql(false), bounds), runs);
  out(
    `\nbaseline: count() of events in range with FINAL: one org ${baseOne.median.toFixed(1)} ms, all orgs ${baseAll.median.toFixed(1)} ms (medians)`,
  );
  out(
    `${'query'.padEnd(38)} ${'one org ms'.padStart(10)} ${'rows'.padStart(5)} ${'/ base'.padStart(7)} ${'all orgs ms'.padStart(11)} ${'rows'.padStart(5)} ${'/ base'.padStart(7)}`,
  );
  const one: number[] = [];
  const every: number[] = [];
  for (const q of QUERIES) {
    const p = { ...range, ...extra[q.name] };
    const l1 = await queryLatency(store, q.name, p, runs);
    const la = await queryLatency(store, q.name, { ...p, org: ALL_ORGS }, runs);
    one.push(l1.median);
    every.push(la.median);
    out(
      `${q.name.padEnd(38)} ${l1.median.toFixed(1).padStart(10)} ${String(l1.rows).padStart(5)} ${(l1.median / baseOne.median).toFixed(1).padStart(6)}x ${la.median.toFixed(1).padStart(11)} ${String(la.rows).padStart(5)} ${(la.median / baseAll.median).toFixed(1).padStart(6)}x`,
    );
  }
  // Each slow all-orgs query's core step alone (floors.ts), run as the query is: how much any rewrite could save.
  out(
    `\n${'floor over every org'.padEnd(38)} ${'query ms'.padStart(10)} ${'floor ms'.padStart(10)} ${'query/floor'.padStart(11)}`,
  );
  for (const [name, floorSql] of Object.entries(FLOORS)) {
    const params = parseParams(allParams(findQuery(name)), { ...range, ...extra[name], org: ALL_ORGS });
    const sql = floorSql.replaceAll(ORG_MATCH, '1 = 1').replaceAll('{db}', store.database);
    const l = await latency(() => store.query(sql, params), runs);
    const q = every[QUERIES.findIndex((x) => x.name === name)]!;
    out(
      `${name.padEnd(38)} ${q.toFixed(1).padStart(10)} ${l.median.toFixed(1).padStart(10)} ${(q / l.median).toFixed(2).padStart(10)}x`,
    );
  }
  const slowest = (xs: number[]) => QUERIES[xs.indexOf(Math.max(...xs))]!.name;
  out(
    `\none org: ${one.filter((m) => m < 300).length}/${one.length} queries under 300 ms median (goal: all); slowest ${slowest(one)} ${Math.max(...one).toFixed(0)} ms`,
  );
  out(
    `all orgs: ${every.filter((m) => m < 3000).length}/${every.length} queries under 3 s median (goal: all); slowest ${slowest(every)} ${Math.max(...every).toFixed(0)} ms`,
  );
}
