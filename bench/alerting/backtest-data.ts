/**
 * The analytics bench's data set, kept: generates it exactly as
 * bench/analytics/run.ts does (same generator, seed, planted attacks and
 * in-ClickHouse copies) into `--dir`, and writes `<dir>/hooklog.yaml` so that
 * `hooklog rules test` can replay rules over it:
 *
 *   npx tsx bench/alerting/backtest-data.ts --dir /tmp/hooklog-backtest [--orgs 2 --users 500 --days 30 --per-day 34
 *   --copies 9]
 *   npm run build
 *   time node bin/hooklog.js -c /tmp/hooklog-backtest/hooklog.yaml rules test consumers/alerting/content \
 *        --since 2026-01-05T00:00:00Z --until 2026-02-04T00:00:00Z
 *
 * Nothing is measured here: the timing is the `rules test` command's own.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore } from '../../platform/store/index.js';
import { backgroundEvents, resetUuids, type GenOptions } from '../analytics/generate.js';
import { insertChunk } from '../analytics/load.js';
import { ATTACKED, plant, RESERVED } from '../analytics/plants.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const { values: a } = parseArgs({
  options: {
    dir: { type: 'string' },
    orgs: { type: 'string', default: '2' },
    users: { type: 'string', default: '500' },
    days: { type: 'string', default: '30' },
    'per-day': { type: 'string', default: '34' },
    copies: { type: 'string', default: '9' },
  },
});
if (!a.dir) throw new Error('--dir <directory> is required');
const dir = resolve(a.dir);
const dataDir = join(dir, 'data');
mkdirSync(dataDir, { recursive: true });
const opts: GenOptions = {
  orgs: Number(a.orgs),
  usersPerOrg: Number(a.users),
  days: Number(a.days),
  eventsPerUserPerDay: Number(a['per-day']),
  start: new Date('2026-01-05T00:00:00Z'),
  seed: 42,
};
const store = openStore({ database: 'bench', dataDir, logger: silentLogger() });
const out = (s: string) => process.stdout.write(s + '\n');
try {
  await migrate(store, silentLogger());
  resetUuids(42);
  const plants = plant(opts);
  let events = 0;
  for (const chunk of backgroundEvents(opts, plants.silence, RESERVED, 20_000)) {
    await insertChunk(store, chunk);
    events += chunk.length;
  }
  await insertChunk(store, plants.events);
  events += plants.events.length;
  out(`generated ${events} events through the real mapping`);
  const copies = Number(a.copies);
  if (copies > 0) {
    const cols = (
      await store.query<{ name: string }>(
        `SELECT name FROM system.columns WHERE database = {db:String} AND table = {t:String} ORDER BY position`,
        { db: store.database, t: EVENTS_TABLE },
      )
    ).map((c) => c.name);
    const select = cols.map((c) =>
      c === 'org'
        ? "concat(org, '-copy', toString({c:UInt32})) AS org"
        : c === 'uuid'
          ? 'u AS uuid'
          : c === 'raw'
            ? 'replaceOne(raw, uuid, u) AS raw'
            : c,
    );
    for (let c = 1; c <= copies; c++) {
      await store.command(
        `INSERT INTO ${store.database}.${EVENTS_TABLE} (${cols.join(', ')}) SELECT ${select.join(', ')} FROM (SELECT *, toString(generateUUIDv4()) AS u FROM ${store.database}.${EVENTS_TABLE} WHERE NOT org LIKE '%-copy%')`,
        { c },
      );
    }
  }
  const [n] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.${EVENTS_TABLE}`);
  writeFileSync(
    join(dir, 'hooklog.yaml'),
    stringify({ data_dir: dataDir, store: { database: 'bench' }, alerting: { allowed_lateness_ms: 300_000 } }),
  );
  const since = opts.start.toISOString();
  const until = new Date(opts.start.getTime() + opts.days * 86_400_000).toISOString();
  out(`${n!.n} events in ${dataDir}; config ${join(dir, 'hooklog.yaml')}; attacked org ${ATTACKED}`);
  out(
    `npm run build && time node bin/hooklog.js -c ${join(dir, 'hooklog.yaml')} rules test consumers/alerting/content --since ${since} --until ${until}`,
  );
  out(
    `time node bin/hooklog.js -c ${join(dir, 'hooklog.yaml')} rules test consumers/alerting/content --since ${since} --until ${until} --org ${ATTACKED}`,
  );
} finally {
  await store.close();
}
