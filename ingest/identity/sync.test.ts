/**
 * The identity sync against the simulated org's directory API, over real Kafka (the shared broker) and embedded
 * ClickHouse (chdb) through the sink's identity pipeline: a full pass pages through several pages of users and
 * every group, honours a 429 until its Reset (and no longer than Reset plus jitter), stays within its share of the
 * users bucket while the same org's System Log poller keeps polling beside it on one request slot; an incremental
 * pass picks up a changed user by `lastUpdated`; the next full pass finds a role assigned (which moves no
 * `lastUpdated`) and tombstones a deleted user; every record is valid per schemas/identity.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { topicNames, type Topics } from '../../platform/stream/headers.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { ConsumedRecord, Stream } from '../../platform/stream/types.js';
import { startClickHouseSink } from '../../consumers/clickhouse-sink/index.js';
import { identityKey, identityTopic, identityUserSchema, type IdentityUser } from '../../schemas/identity.js';
import { kafkaBrokerList } from '../../test/kafka/inject.js';
import { Collector, FAST_POLICIES, orgConfig } from '../../test/simulated-org/harness.js';
import { Directory, DirectoryApi, logEvent, SimulatedOrg } from '../../test/simulated-org/index.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { startIngest, type Ingest } from '../index.js';
import { identityPipeline } from './rows.js';

const USERS = 450; // three pages of 200
// Small enough that the share, not the one request slot, is what paces the full pass.
const BUCKET = { limit: 100, windowMs: 1000 };
const SHARE = 0.3;

const uid = (i: number) => `00u${String(i).padStart(4, '0')}`;

describe('identity sync: simulated org → Kafka → ClickHouse', () => {
  let stream: Stream;
  let store: Store;
  let dataDir: string;
  let topics: Topics;
  let idTopic: string;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    stream = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('idsync'),
      logger: silentLogger(),
    });
    const prefix = randomName('ids');
    topics = topicNames(prefix);
    idTopic = identityTopic(prefix);
    await stream.ensureTopics([
      { name: topics.logs, partitions: 2 },
      { name: topics.legacyEvents, partitions: 1 },
      { name: topics.deadletter, partitions: 1 },
      { name: topics.cursors, partitions: 2, compacted: true },
      { name: idTopic, partitions: 3, compacted: true },
    ]);
    dataDir = mkdtempSync(join(tmpdir(), 'hooklog-idsync-'));
    store = openStore({ database: randomName('ids'), dataDir, logger: silentLogger() });
    await migrate(store, silentLogger());
  }, 60_000);

  afterAll(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    await stream?.close();
    await store?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('pages, honours a 429, keeps its share beside the System Log poller, then follows changes and deletions', async () => {
    const sim = await SimulatedOrg.start({ rateLimit: { logs: false, management: BUCKET } });
    stops.push(() => sim.stop());
    const dir = new Directory();
    const api = new DirectoryApi(dir);
    sim.use(api);
    dir.addGroup('00gadmins', 'Admins', { roles: ['ORG_ADMIN'] });
    dir.addGroup('00gstaff', 'Staff');
    dir.addGroup('00gempty', 'Nobody', { roles: ['READ_ONLY_ADMIN'] });
    for (let i = 0; i < USERS; i++) dir.addUser(uid(i), `user${i}@acme.test`);
    for (let i = 0; i < USERS; i += 3) dir.addMember('00gstaff', uid(i));
    dir.addMember('00gadmins', uid(1));
    dir.assignUserRole(uid(1), 'HELP_DESK_ADMIN');
    dir.assignUserRole(uid(2), 'SUPER_ADMIN');
    // A name an attacker chose: kept as text, bounded by the schema.
    dir.addGroup('00gevil', '<img src=x onerror=alert(1)>\u202e', {});
    dir.addMember('00gevil', uid(4));
    // The org's other clients made the first directory request's window answer 429, Reset 1.5 s ahead.
    api.faults.next({ kind: '429', reset: { inMs: 1_500 } });
    sim.addLogEvents([{ event: logEvent(0), published: Date.now() - 1000 }]);

    const sinkGroup = randomName('sink');
    const sink = await startClickHouseSink({
      stream,
      store,
      topics,
      group: sinkGroup,
      logger: silentLogger(),
      maxBatchWaitMs: 50,
      extraPipelines: [identityPipeline(idTopic)],
    });
    stops.push(() => sink.stop());
    const collected = await Collector.start(stream, idTopic);
    stops.push(() => collected.stop());

    const org = orgConfig(sim, {
      id: 'acme',
      system_log: { start: '1h', poll_interval_ms: 200 },
      identity_sync: { enabled: true, interval_ms: 1_000, full_interval_ms: 30_000, rate_limit_share: SHARE },
    });
    const ingest: Ingest = await startIngest({
      orgs: [org],
      stream,
      topics,
      logger: silentLogger(),
      policies: FAST_POLICIES,
      maxConcurrentRequests: 1,
      identityTopic: idTopic,
    });
    stops.push(() => ingest.stop());
    const sync = () => ingest.identitySyncs.get('acme');

    // The first full pass.
    await waitFor(() => sync()?.completed.full ?? 0, {
      until: (n) => n >= 1,
      what: 'the first full pass',
      timeoutMs: 60_000,
    });
    const latest = () => latestByKey(collected.records);
    await waitFor(() => latest().size, { until: (n) => n >= USERS, what: 'a record per user', timeoutMs: 20_000 });
    const users = userValues(latest());
    expect(users.size).toBe(USERS);
    const u1 = users.get(uid(1))!;
    expect(u1).toMatchObject({
      org: 'acme',
      user_id: uid(1),
      login: 'user1@acme.test',
      status: 'ACTIVE',
      truncated: false,
    });
    expect(u1.groups).toEqual([{ id: '00gadmins', name: 'Admins' }]);
    expect(users.get(uid(3))!.groups).toEqual([{ id: '00gstaff', name: 'Staff' }]);
    // Direct and through a group, once each, sorted.
    expect(u1.admin_roles).toEqual(['HELP_DESK_ADMIN', 'ORG_ADMIN']);
    expect(users.get(uid(2))!.admin_roles).toEqual(['SUPER_ADMIN']);
    expect(users.get(uid(5))!).toMatchObject({ groups: [], admin_roles: [] });
    expect(users.get(uid(4))!.groups).toContainEqual({ id: '00gevil', name: '<img src=x onerror=alert(1)>\u202e' });

    // Paging: the users list was read page by page, each next link as given.
    const userPages = sim.requests.filter((r) => r.path === '/api/v1/users' && r.status === 200 && !r.params.filter);
    expect(userPages.length).toBeGreaterThanOrEqual(3);
    expect(userPages.filter((r) => r.params.after !== undefined).length).toBeGreaterThanOrEqual(2);
    expect(userPages.every((r) => r.params.limit === '200')).toBe(true);

    // The 429: nothing of the org's directory was asked again before its Reset; the wait ended within Reset plus
    // the jitter (FAST_POLICIES.resetJitter: at most 150 ms) and a little scheduling.
    const dirReqs = sim.requests.filter(
      (r) => r.path.startsWith('/api/v1/users') || r.path.startsWith('/api/v1/groups'),
    );
    const limited = dirReqs.findIndex((r) => r.status === 429);
    expect(limited).toBeGreaterThanOrEqual(0);
    const resetMs = Math.ceil((dirReqs[limited]!.at + 1_500) / 1000) * 1000;
    const after = dirReqs[limited + 1]!;
    expect(after.at).toBeGreaterThanOrEqual(resetMs);
    expect(after.at - resetMs).toBeLessThan(1_500);

    // The share: no window of either family bucket took more than share × limit requests.
    for (const family of ['/api/v1/users', '/api/v1/groups']) {
      const perWindow = new Map<number, number>();
      for (const r of dirReqs.filter((x) => x.path.startsWith(family) && x.status !== 429)) {
        const w = Math.floor(r.at / BUCKET.windowMs);
        perWindow.set(w, (perWindow.get(w) ?? 0) + 1);
      }
      expect(Math.max(...perWindow.values()), family).toBeLessThanOrEqual(Math.floor(BUCKET.limit * SHARE));
    }
    // The System Log poller of the same org, on the one request slot, kept its cadence while the pass ran.
    const first = dirReqs[0]!.at;
    const last = dirReqs[dirReqs.length - 1]!.at;
    const logTimes = sim.requests
      .filter((r) => r.path === '/api/v1/logs' && r.at >= first && r.at <= last)
      .map((r) => r.at);
    expect(logTimes.length).toBeGreaterThanOrEqual(Math.floor((last - first) / 1000));
    const gaps = logTimes.slice(1).map((t, i) => t - logTimes[i]!);
    expect(Math.max(...gaps)).toBeLessThan(2_500);

    // ClickHouse: one row per user, read with FINAL.
    const rows = async () =>
      store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.identity_users FINAL WHERE org = 'acme'`);
    await waitFor(rows, { until: (r) => Number(r[0]?.n) === USERS, what: 'identity_users rows' });
    const [row1] = await store.query<Record<string, unknown>>(
      `SELECT login, status, group_ids, admin_roles, deleted FROM ${store.database}.identity_users FINAL WHERE org = 'acme' AND user_id = {u:String}`,
      { u: uid(1) },
    );
    expect(row1).toMatchObject({
      login: 'user1@acme.test',
      status: 'ACTIVE',
      admin_roles: ['HELP_DESK_ADMIN', 'ORG_ADMIN'],
    });

    // Incremental: a suspended user shows within an interval, read by lastUpdated, without a full pass.
    const fullBefore = sync()!.completed.full;
    dir.updateUser(uid(7), { status: 'SUSPENDED' });
    await waitFor(() => userValues(latestByKey(collected.records)).get(uid(7))?.status, {
      until: (s) => s === 'SUSPENDED',
      what: "user 7's suspension",
      timeoutMs: 10_000,
    });
    expect(sync()!.completed.full).toBe(fullBefore);
    const incremental = sim.requests.filter((r) => r.path === '/api/v1/users' && r.params.filter !== undefined);
    expect(incremental.length).toBeGreaterThanOrEqual(1);
    expect(incremental[incremental.length - 1]!.params.filter).toMatch(
      /^lastUpdated gt "\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"$/,
    );

    // What moves no lastUpdated (a role assigned) and a deletion: found by the next full pass.
    dir.assignUserRole(uid(10), 'USER_ADMIN');
    dir.deleteUser(uid(9));
    await waitFor(() => latestByKey(collected.records).get(identityKey('acme', uid(9)))?.value.length, {
      until: (n) => n === 0,
      what: "user 9's tombstone",
      timeoutMs: 60_000,
    });
    expect(sync()!.completed.full).toBeGreaterThan(fullBefore);
    expect(userValues(latestByKey(collected.records)).get(uid(10))!.admin_roles).toEqual(['USER_ADMIN']);
    await waitFor(rows, {
      until: (r) => Number(r[0]?.n) === USERS - 1,
      what: 'identity_users rows after the deletion',
    });
    const gone = await store.query<{ n: string }>(
      `SELECT count() AS n FROM ${store.database}.identity_users FINAL WHERE org = 'acme' AND user_id = {u:String}`,
      { u: uid(9) },
    );
    expect(Number(gone[0]!.n)).toBe(0);

    // Every record is the contract; the org saw no request break its rules.
    for (const r of collected.records) {
      if (r.value.length === 0) continue;
      const v = identityUserSchema.safeParse(JSON.parse(r.value.toString('utf8')));
      expect(v.success, JSON.stringify(v.error?.issues)).toBe(true);
      expect(r.key).toBe(identityKey(v.data!.org, v.data!.user_id));
    }
    expect(sim.violations).toEqual([]);
    // Nothing was refused on the way: the Kafka stream's sync records on the topic (its reads of the live keys)
    // became no row and no dead letter.
    const letters = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.deadletter`);
    expect(Number(letters[0]!.n)).toBe(0);
  }, 180_000);
});

function latestByKey(records: readonly ConsumedRecord[]): Map<string, ConsumedRecord> {
  const m = new Map<string, ConsumedRecord>();
  for (const r of records) {
    if (r.key === null || r.key.startsWith('\u0000')) continue;
    const prev = m.get(r.key);
    if (!prev || prev.offset < r.offset || prev.partition !== r.partition) m.set(r.key, r);
  }
  return m;
}

function userValues(latest: ReadonlyMap<string, ConsumedRecord>): Map<string, IdentityUser> {
  const out = new Map<string, IdentityUser>();
  for (const r of latest.values()) {
    if (r.value.length === 0) continue;
    const v = JSON.parse(r.value.toString('utf8')) as IdentityUser;
    out.set(v.user_id, v);
  }
  return out;
}
