/**
 * bench/analytics: N generated events (background + planted attacks) into
 * embedded ClickHouse through the sink's mapping; then bytes per event on
 * disk, the raw column as String vs the JSON type, and the median latency of
 * every named query over the attacked org's whole range.
 *
 *   npx tsx bench/analytics/run.ts [--orgs 2 --users 500 --days 30 --per-day 34 --copies 9 --runs 5]
 *
 * Volume: the generated events go through the real path (JSON, rows.ts,
 * insert); that path runs at a few thousand events/s on 2 cores, so 10M
 * would take most of an hour. `--copies k` then multiplies the data inside
 * ClickHouse: k more orgs, each a copy of the generated ones under a new org
 * name with fresh uuids (in the column and inside `raw`). The attacked org the
 * queries read keeps its own size (orgs x users x days x per-day / orgs).
 *
 * Baseline measured in the same run: query latency against a plain FINAL
 * count of the org's events in range (the cheapest query over the same data).
 * Query figures are medians of --runs runs after one warm-up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore } from '../../platform/store/index.js';
import { QUERIES } from '../../analytics/registry.js';
import { backgroundEvents, resetUuids, type GenOptions } from './generate.js';
import { copyOrgs, insertChunk } from './load.js';
import { ATTACKED, plant, RESERVED } from './plants.js';
import { columnBytes, latency, queryLatency, tableBytes } from './measure.js';
import { compareRawStorage } from './raw-json.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const { values: a } = parseArgs({
  options: {
    orgs: { type: 'string', default: '20' },
    users: { type: 'string', default: '500' },
    days: { type: 'string', default: '30' },
    'per-day': { type: 'string', default: '34' },
    copies: { type: 'string', default: '9' },
    runs: { type: 'string', default: '5' },
    'raw-sample': { type: 'string', default: '200000' },
  },
});
const copies = Number(a.copies);
const opts: GenOptions = {
  orgs: Number(a.orgs),
  usersPerOrg: Number(a.users),
  days: Number(a.days),
  eventsPerUserPerDay: Number(a['per-day']),
  start: new Date('2026-01-05T00:00:00Z'),
  seed: 42,
};
const runs = Number(a.runs);
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-bench-analytics-'));
const store = openStore({ database: 'bench', dataDir, logger: silentLogger() });
const out = (s: string) => process.stdout.write(s + '\n');

try {
  await migrate(store, silentLogger());
  resetUuids(42);
  const plants = plant(opts);
  const expected = opts.orgs * opts.usersPerOrg * opts.days * opts.eventsPerUserPerDay;
  out(
    `# bench/analytics: ~${(expected / 1e6).toFixed(2)}M background events (${opts.orgs} orgs x ${opts.usersPerOrg} users x ${opts.days} days x ${opts.eventsPerUserPerDay}/user/day) + ${plants.events.length} planted`,
  );

  // Ingest: generate, serialise, map (rows.ts) and insert, in chunks as the sink would batch.
  let events = 0;
  let jsonBytes = 0;
  const t0 = performance.now();
  let lastReport = t0;
  for (const chunk of backgroundEvents(opts, plants.silence, RESERVED, 20_000)) {
    jsonBytes += await insertChunk(store, chunk);
    events += chunk.length;
    if (performance.now() - lastReport > 30_000) {
      lastReport = performance.now();
      out(`  … ${events} events, ${Math.round(events / ((lastReport - t0) / 1000))} ev/s`);
    }
  }
  jsonBytes += await insertChunk(store, plants.events);
  events += plants.events.length;
  await store.insertJson('deadletter', plants.deadletters);
  const ingestS = (performance.now() - t0) / 1000;
  out(
    `ingest: ${events} events in ${ingestS.toFixed(1)} s = ${Math.round(events / ingestS)} ev/s (generate + JSON + rows.ts mapping + insert); raw JSON ${(jsonBytes / events).toFixed(0)} bytes/event on average`,
  );

  if (copies > 0) {
    const tc = performance.now();
    await copyOrgs(store, copies);
    const [n] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.${EVENTS_TABLE}`);
    out(
      `copies: ${copies} copies inside ClickHouse in ${((performance.now() - tc) / 1000).toFixed(0)} s: ${n!.n} events in the table`,
    );
  }

  const beforeMerge = await tableBytes(store, EVENTS_TABLE);
  const tm = performance.now();
  await store.command(`OPTIMIZE TABLE ${store.database}.${EVENTS_TABLE} FINAL`);
  const merged = await tableBytes(store, EVENTS_TABLE);
  out(
    `disk: ${(beforeMerge.bytes / beforeMerge.rows).toFixed(1)} bytes/event as inserted (${beforeMerge.parts} parts); ${(merged.bytes / merged.rows).toFixed(1)} bytes/event after OPTIMIZE FINAL (${merged.parts} parts, ${((performance.now() - tm) / 1000).toFixed(0)} s); ${merged.rows} rows`,
  );
  const cols = await columnBytes(store, EVENTS_TABLE);
  const total = cols.reduce((s, c) => s + c.compressed, 0);
  out(
    'largest columns (compressed bytes/event, share): ' +
      cols
        .slice(0, 8)
        .map(
          (c) => `${c.name} ${(c.compressed / merged.rows).toFixed(1)} (${((100 * c.compressed) / total).toFixed(0)}%)`,
        )
        .join(', '),
  );

  // Raw JSON storage: String with ZSTD levels vs the JSON type, on a sample.
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
  const base = await latency(
    () =>
      store.query(
        `SELECT count() FROM ${store.database}.${EVENTS_TABLE} FINAL WHERE org = {org:String} AND published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')}`,
        {
          org: range.org,
          since: range.since.replace('T', ' ').replace('Z', ''),
          until: range.until.replace('T', ' ').replace('Z', ''),
        },
      ),
    runs,
  );
  out(`\nbaseline: count() of the org's events in range, FINAL: median ${base.median.toFixed(1)} ms`);
  out(
    `${'query'.padEnd(38)} ${'median ms'.padStart(9)} ${'min'.padStart(7)} ${'max'.padStart(7)} ${'rows'.padStart(5)} ${'/ baseline'.padStart(10)}`,
  );
  const medians: number[] = [];
  for (const q of QUERIES) {
    const l = await queryLatency(store, q.name, { ...range, ...extra[q.name] }, runs);
    medians.push(l.median);
    out(
      `${q.name.padEnd(38)} ${l.median.toFixed(1).padStart(9)} ${l.min.toFixed(1).padStart(7)} ${l.max.toFixed(1).padStart(7)} ${String(l.rows).padStart(5)} ${(l.median / base.median).toFixed(2).padStart(9)}x`,
    );
  }
  out(
    `\n${medians.filter((m) => m < 300).length}/${medians.length} queries under 300 ms median, ${medians.filter((m) => m < 1000).length}/${medians.length} under 1 s; slowest ${Math.max(...medians).toFixed(0)} ms`,
  );
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
