/**
 * bench/search: the Search page's request on the analytics bench's data (issue 37). Goal: for one org over its
 * last 7 days, with a selective filter and a broad one, the first page of events + the histogram + the facets
 * in under 1 s median, alone.
 *
 *   npx tsx bench/search/run.ts --data-dir DIR [--runs 5] [--days 7] [--org acme] [--facets a,b,c] [--explain]
 *
 * The data is bench/analytics's, made by it in DIR and read here as it left it (this bench writes nothing):
 *
 *   npx tsx bench/analytics/run.ts --events 20000000 --orgs 200 --base-orgs 10 --users 500 --runs 1 \
 *        --merge final --raw-sample 0 --data-dir DIR
 *
 * stopped once its "disk:" line says every day is folded (before its query timings), or left to finish.
 *
 * What is measured is what the console's Search page asks (console/api-routes.ts `pageSearch`: its first
 * 50 rows of the default columns, the histogram over the range and the page's facets) through the code the
 * page's route and `hooklog search` both call (analytics/search/search.ts `search`), which runs the page's
 * queries concurrently (Promise.all): one wall time per request, as the page waits for it. The org is the
 * attacked one (bench/analytics/plants.ts), the range its last --days days (to the end of the day of its
 * newest event). Filters:
 *   - selective: its failed sign-ins (a few hundred events in 7 days of the 20M set);
 *   - broad: every `user.authentication.*` event (about a third of its events);
 *   - everything: a blank filter (every event of the 7 days).
 * Then each of the request's queries alone, in sequence, to show where the time goes, and their sum beside the
 * request's time: whether running them concurrently pays on the machine.
 *
 * Baseline, measured in the same run and paying the same one-off costs (the same org, range, FINAL and table):
 * a plain `count()` with FINAL of the org's events in the range; each request's ratio to it is printed.
 * Figures are medians of --runs runs (at least 5) after one warm-up each. Load average before and after, the
 * data's size and the commit are printed with them. Figures count only from a run alone on a quiet machine.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import type { Principal } from '../../platform/access.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { compileSearch, search, type BoundQuery } from '../../analytics/search/search.js';
import { pageSearch } from '../../console/api-routes.js';
import { latency, tableBytes } from '../analytics/measure.js';
import { ATTACKED } from '../analytics/plants.js';
import { daysFolded } from '../analytics/scale.js';

const { values: a } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    runs: { type: 'string', default: '5' },
    days: { type: 'string', default: '7' },
    org: { type: 'string', default: ATTACKED },
    facets: { type: 'string' },
    explain: { type: 'boolean', default: false },
  },
  strict: true,
});
const dataDir = a['data-dir'];
if (!dataDir || !existsSync(dataDir))
  throw new Error('--data-dir: the directory bench/analytics/run.ts made with --data-dir (see the header)');
const runs = Number(a.runs);
if (!Number.isInteger(runs) || runs < 5) throw new Error(`--runs must be a whole number of at least 5, got ${a.runs}`);
const days = Number(a.days);
if (!Number.isInteger(days) || days < 1 || days > 30) throw new Error(`--days must be 1 to 30, got ${a.days}`);
const org = a.org!;

const FILTERS: ReadonlyArray<{ name: string; filter: string }> = [
  { name: 'selective', filter: 'eventType eq "user.session.start" and outcome.result eq "FAILURE"' },
  { name: 'broad', filter: 'eventType sw "user.authentication."' },
  { name: 'everything', filter: '' },
];
/** A console user who sees every org: the bench measures the engine, not the access check. */
const ANALYST: Principal = { kind: 'key', id: 'bench-search', name: 'bench/search', orgs: 'all', role: 'viewer' };

const out = (s: string) => process.stdout.write(s + '\n');
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const ms = (x: number) => x.toFixed(1);
const DAY = 86_400_000;

function commit(): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
    return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? ' (with uncommitted changes)' : ''}`;
  } catch {
    return 'unknown (no git)';
  }
}

/** One compiled query alone, as search.ts runs it. */
const runAlone = (store: Store, q: BoundQuery) => store.query(q.sql.replaceAll('{db}', store.database), q.params);

const store = openStore({ database: 'bench', dataDir, logger: silentLogger() });
try {
  out(`# bench/search: the Search page's request on ${dataDir}; commit ${commit()}; ${cpus().length} cores`);
  out(`load average before: ${load()}`);
  await migrate(store, silentLogger());
  const table = `${store.database}.${EVENTS_TABLE}`;
  const size = await tableBytes(store, EVENTS_TABLE);
  if (size.rows === 0)
    throw new Error(`no events in ${dataDir}: make them first with bench/analytics/run.ts --data-dir (see the header)`);
  const [orgs] = await store.query<{ n: string }>(`SELECT uniqExact(org) AS n FROM ${table}`);
  const folded = await daysFolded(store);
  out(
    `data: ${size.rows} events over ${orgs!.n} orgs, ${(size.bytes / 1e9).toFixed(2)} GB on disk (${(size.bytes / size.rows).toFixed(1)} bytes/event), ${size.parts} parts, ${folded.folded} of ${folded.folded + folded.unfolded} days folded into one part`,
  );
  if (folded.unfolded > 0)
    out('  (not every day is folded: the service folds a day an hour after its last write; see the header)');

  // The org's last `days` days: up to the end of the day of its newest event.
  const [last] = await store.query<{ t: string }>(
    `SELECT toString(max(published)) AS t FROM ${table} WHERE org = {org:String}`,
    { org },
  );
  const newest = Date.parse(`${last!.t.replace(' ', 'T')}Z`);
  if (!Number.isFinite(newest)) throw new Error(`--org ${org}: no events of that org in ${dataDir}`);
  const until = Math.floor(newest / DAY) * DAY + DAY;
  const since = until - days * DAY;
  const range = { org, since: new Date(since).toISOString(), until: new Date(until).toISOString() };
  const bounds = {
    org,
    since: range.since.replace('T', ' ').replace('Z', ''),
    until: range.until.replace('T', ' ').replace('Z', ''),
  };
  const countSql = `SELECT count() AS n FROM ${table} FINAL WHERE org = {org:String} AND published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')}`;
  const [inRange] = await store.query<{ n: string }>(countSql, bounds);

  const request = (filter: string) =>
    pageSearch({ ...range, filter, ...(a.facets !== undefined ? { facets: a.facets } : {}) }, Date.now());
  const shape = compileSearch(ANALYST, request(''));
  const facetsOf = request('').facets ?? [];
  out(
    `org ${org}, ${days} days [${range.since}, ${range.until}): ${inRange!.n} events. Each request: the first ${Number(shape.events.params.limit) - 1} rows of ${shape.fields.length} columns, the histogram (${shape.histogram!.bucketSeconds} s buckets), ${facetsOf.length} facets (${facetsOf.join(', ')}, top ${shape.facets[0]?.params.facet_limit ?? '-'} values), ${2 + facetsOf.length} queries run concurrently by search() as the page's one request runs them`,
  );

  const base = await latency(() => store.query(countSql, bounds), runs);
  out(
    `\nbaseline: count() with FINAL of the org's ${days} days: ${ms(base.median)} ms median (min ${ms(base.min)}, max ${ms(base.max)})`,
  );
  out(
    `${'filter'.padEnd(11)} ${'matched'.padStart(8)} ${'rows'.padStart(5)} ${'median ms'.padStart(10)} ${'min'.padStart(7)} ${'max'.padStart(7)} ${'/ base'.padStart(8)}  goal < 1 s`,
  );
  const results: Array<{ name: string; median: number }> = [];
  for (const f of FILTERS) {
    const req = request(f.filter);
    let page = await search(store, ANALYST, req);
    const l = await latency(async () => {
      page = await search(store, ANALYST, req);
    }, runs);
    const matched = (page.histogram?.buckets ?? []).reduce((s, b) => s + b.n, 0);
    results.push({ name: f.name, median: l.median });
    out(
      `${f.name.padEnd(11)} ${String(matched).padStart(8)} ${String(page.rows.length).padStart(5)} ${ms(l.median).padStart(10)} ${ms(l.min).padStart(7)} ${ms(l.max).padStart(7)} ${(l.median / base.median).toFixed(1).padStart(7)}x  ${l.median < 1000 ? 'met' : 'NOT met'}`,
    );
  }
  out(
    `filters: ${FILTERS.map((f) => `${f.name} = ${f.filter === '' ? '(blank: every event)' : f.filter}`).join('; ')}`,
  );

  // Where the time goes: each query of the request alone, in sequence.
  out(`\n${'query alone (median ms)'.padEnd(30)} ${FILTERS.map((f) => f.name.padStart(11)).join(' ')}`);
  const compiled = FILTERS.map((f) => compileSearch(ANALYST, request(f.filter)));
  const parts: Array<[string, (c: (typeof compiled)[number]) => BoundQuery]> = [
    ['first page', (c) => c.events],
    ['histogram', (c) => c.histogram!],
    ...shape.facets.map((x, i): [string, (c: (typeof compiled)[number]) => BoundQuery] => [
      `facet ${x.field}`,
      (c) => c.facets[i]!,
    ]),
  ];
  const sums = compiled.map(() => 0);
  for (const [label, pick] of parts) {
    const cells: string[] = [];
    for (const [i, c] of compiled.entries()) {
      const m = (await latency(() => runAlone(store, pick(c)), runs)).median;
      sums[i] = sums[i]! + m;
      cells.push(ms(m).padStart(11));
    }
    out(`${label.slice(0, 30).padEnd(30)} ${cells.join(' ')}`);
  }
  // Against the request's wall time: whether running them concurrently (as search() does) pays on this machine.
  out(`${'sum alone (in sequence)'.padEnd(30)} ${sums.map((x) => ms(x).padStart(11)).join(' ')}`);
  out(`${'the request (concurrently)'.padEnd(30)} ${results.map((r) => ms(r.median).padStart(11)).join(' ')}`);
  if (a.explain)
    for (const [label, pick] of parts) {
      const q = pick(compiled[FILTERS.length - 1]!);
      const plan = await store.query<{ explain: string }>(
        `EXPLAIN indexes = 1 ${q.sql.replaceAll('{db}', store.database)}`,
        q.params,
      );
      out(`\nEXPLAIN indexes = 1 of ${label} (${FILTERS.at(-1)!.name}):\n${plan.map((r) => r.explain).join('\n')}`);
    }

  out(
    `\n${results.filter((r) => r.median < 1000).length} of ${results.length} requests under 1 s median (goal: all); load average after: ${load()}`,
  );
} finally {
  await store.close();
}
