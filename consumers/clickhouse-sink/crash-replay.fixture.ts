/**
 * Crash injection between insert and commit, for the sink on either stream
 * kind (crash-embedded.test.ts, crash-kafka.test.ts), with real chdb.
 *
 * A "crash" here is what a `kill -9` leaves behind, without paying for a new
 * process (and a new chdb engine) each time: from the crash point on, the
 * sink's store is dead — every insert and every plan read or write fails
 * without reaching ClickHouse — so no handler succeeds and nothing more is
 * committed; the sink is then stopped and a fresh one (no memory of the old
 * one) starts in the same group from the committed position. Crash points are
 * drawn from a seeded PRNG: after how many confirmed inserts, and each
 * incarnation's batch size and batch wait. Records keep arriving in chunks of
 * random size at random intervals while the sinks run, so the first cut of a
 * range is often by time and its replay (records all there) would be by size.
 * The events table has its own arrivals table (its view, migration 032's), counted the same way: every
 * record one arrival row with one copy, however often its batch was inserted.
 */
import { seededRandom } from '../../test/support/random.js';
import { randomName, waitFor, waitForCount } from '../../test/support/wait.js';
import { HooklogError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log.js';
import type { Store } from '../../platform/store/index.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import type { Stream, StreamRecord } from '../../platform/stream/types.js';
import { inputTable } from './events-input.js';
import { startClickHouseSink } from './index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

/** How far the producer may run ahead of the sinks' commits, in records. */
const MAX_BACKLOG = 600;

export interface CrashReplayOptions {
  readonly stream: Stream;
  readonly store: Store;
  readonly logger: Logger;
  readonly seed: number;
  /** Crash points to inject (each one a crash after a confirmed insert, before its commit). */
  readonly crashes: number;
  readonly partitions: number;
}

export interface CrashReplayResult {
  readonly crashes: number;
  readonly appended: number;
  /** Rows in the table, read without FINAL and with merges stopped: what was really inserted. */
  readonly rawRows: number;
  /** Rows in the arrivals table and their copies, read the same way. */
  readonly arrivalRows: number;
  readonly arrivalCopies: number;
  readonly distinctUuids: number;
  /** Appended uuids with no row. */
  readonly missing: number;
  /** Rows whose uuid was never appended. */
  readonly unexpected: number;
  readonly committed: number;
  readonly incarnations: number;
}

/** A store that works until `crash()`, then fails every call as a dead process would. */
function mortalStore(real: Store, afterInsert: (table: string) => boolean): Store & { readonly dead: boolean } {
  let dead = false;
  const refuse = () => {
    throw new HooklogError('STORE_UNAVAILABLE', 'crashed (injected)', { retriable: false });
  };
  return {
    kind: real.kind,
    database: real.database,
    client: real.client,
    get dead() {
      return dead;
    },
    async command(sql, params) {
      if (dead) refuse();
      return real.command(sql, params);
    },
    async query(sql, params) {
      if (dead) refuse();
      return real.query(sql, params);
    },
    async insertJson(table, rows, opts) {
      if (dead) refuse();
      await real.insertJson(table, rows, opts);
      // The insert is confirmed; crashing now is crashing between insert and commit.
      if (afterInsert(table)) {
        dead = true;
        refuse();
      }
    },
    async insertTsv(table, columns, body, opts) {
      if (dead) refuse();
      await real.insertTsv(table, columns, body, opts);
      if (afterInsert(table)) {
        dead = true;
        refuse();
      }
    },
    readOnlyQuery: (sql) => real.readOnlyQuery(sql),
    holdWrites: () => real.holdWrites(),
    backupDatabase: (dir) => real.backupDatabase(dir),
    restoreDatabase: (dir, from) => real.restoreDatabase(dir, from),
    ping: () => real.ping(),
    close: async () => undefined,
  };
}

/** A v4-shaped uuid from the PRNG. */
export function uuid(rand: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(rand() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

/** A realistic sign-in event record, as the hook receiver appends it. */
export function event(rand: () => number, org: string, n: number, id: string): StreamRecord {
  // Two days, so one insert often writes two parts (one per daily partition, migration 032).
  const published = new Date(Date.UTC(2026, 9, 20, 12) + Math.floor(rand() * 86_400_000)).toISOString();
  const value = {
    uuid: id,
    published,
    eventType: rand() < 0.5 ? 'user.session.start' : 'user.authentication.sso',
    version: '0',
    severity: 'INFO',
    displayMessage: 'User login to Okta',
    actor: { id: `00u${n}`, type: 'User', alternateId: `user${n % 17}@example.com`, displayName: `User ${n % 17}` },
    client: { ipAddress: `10.0.${n % 250}.${(n * 7) % 250}` },
    outcome: { result: rand() < 0.9 ? 'SUCCESS' : 'FAILURE' },
  };
  return {
    key: org,
    value: Buffer.from(JSON.stringify(value)),
    headers: {
      [Header.org]: org,
      [Header.source]: 'hook',
      [Header.hookId]: 'h1',
      [Header.receivedAt]: new Date().toISOString(),
    },
  };
}

export async function crashReplay(o: CrashReplayOptions): Promise<CrashReplayResult> {
  const rand = seededRandom(o.seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const { store, stream } = o;
  const table = randomName('events_crash');
  const arrivals = randomName('arrivals_crash');
  await store.command(`CREATE TABLE ${store.database}.${table} AS ${store.database}.${EVENTS_TABLE}`);
  await store.command(`CREATE TABLE ${store.database}.${arrivals} AS ${store.database}.arrivals`);
  // Merges would fold duplicates away at any moment; stopped, a count without FINAL is what was inserted.
  await store.command(`SYSTEM STOP MERGES ${store.database}.${table}`);
  await store.command(`SYSTEM STOP MERGES ${store.database}.${arrivals}`);
  const topics = topicNames(randomName('crash'));
  await stream.ensureTopics([
    { name: topics.logs, partitions: o.partitions },
    { name: topics.deadletter, partitions: 1 },
  ]);
  const orgs = Array.from({ length: o.partitions * 3 }, (_, i) => `org${i}`);
  const group = randomName('sink');

  const committedSum = async () =>
    [...(await stream.committedOffsets(topics.logs, group)).values()].reduce((a, b) => a + b, 0);

  // The producer: chunks of 1..25 records every 0..60 ms until told to stop, at most MAX_BACKLOG records ahead of
  // the group's commits. Unbounded, it ran for as long as the 55 crashes took and left the last sink tens of
  // thousands of records to drain in batches of 3 to 60 (most of the test's minutes, and all of them full batches
  // cut by size); bounded, records still arrive while every incarnation runs, and the final drain is short.
  let producing = true;
  let appended = 0;
  let committed = 0;
  const sentUuids = new Set<string>();
  const producer = (async () => {
    while (producing) {
      if (appended - committed > MAX_BACKLOG) {
        committed = await committedSum();
        if (appended - committed > MAX_BACKLOG) await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const chunk = Array.from({ length: int(1, 25) }, () => {
        const id = uuid(rand);
        sentUuids.add(id);
        return event(rand, orgs[int(0, orgs.length - 1)]!, appended++, id);
      });
      await stream.append(topics.logs, chunk);
      await new Promise((r) => setTimeout(r, int(0, 60)));
    }
  })();

  let crashes = 0;
  let incarnations = 0;
  try {
    while (crashes < o.crashes) {
      incarnations++;
      let insertsLeft = int(1, 5);
      const mortal = mortalStore(store, (t) => t === inputTable(table) && --insertsLeft === 0);
      const sink = await startClickHouseSink({
        stream,
        store: mortal,
        topics,
        group,
        logger: o.logger,
        eventsTable: table,
        arrivalsTable: arrivals,
        consumeDeadletter: false,
        maxBatchRecords: int(3, 60),
        maxBatchWaitMs: int(10, 150),
      });
      try {
        await waitFor(() => mortal.dead, {
          timeoutMs: 60_000,
          intervalMs: 5,
          what: `crash point ${crashes + 1}`,
          seen: () =>
            `${insertsLeft} more inserts into ${inputTable(table)} before the crash; ${appended} events appended`,
        });
        crashes++;
      } finally {
        await sink.stop();
      }
    }
  } finally {
    producing = false;
    await producer;
  }

  // The last incarnation never crashes: it drains everything.
  incarnations++;
  const sink = await startClickHouseSink({
    stream,
    store,
    topics,
    group,
    logger: o.logger,
    eventsTable: table,
    arrivalsTable: arrivals,
    consumeDeadletter: false,
    maxBatchRecords: int(3, 60),
    maxBatchWaitMs: int(10, 150),
  });
  try {
    // Its batches are 3 to 60 records, each an fsynced insert: on a 2-core machine running the whole suite the
    // drain has taken over 120 s. What the test must catch is a sink that stops committing, so it fails on 60 s
    // without progress (or 8 min in all) and says how far the commits got.
    await waitForCount(committedSum, appended, {
      stallMs: 60_000,
      timeoutMs: 480_000,
      intervalMs: 100,
      what: 'records committed',
    });
  } finally {
    await sink.stop();
  }
  const [stats] = await store.query<{ n: string; u: string }>(
    `SELECT count() AS n, uniqExact(uuid) AS u FROM ${store.database}.${table}`,
  );
  const [arrived] = await store.query<{ n: string; c: string }>(
    `SELECT count() AS n, sum(copies) AS c FROM ${store.database}.${arrivals}`,
  );
  const stored = new Set(
    (await store.query<{ uuid: string }>(`SELECT DISTINCT uuid FROM ${store.database}.${table}`)).map((r) => r.uuid),
  );
  return {
    crashes,
    appended,
    rawRows: Number(stats!.n),
    arrivalRows: Number(arrived!.n),
    arrivalCopies: Number(arrived!.c),
    distinctUuids: Number(stats!.u),
    missing: [...sentUuids].filter((u) => !stored.has(u)).length,
    unexpected: [...stored].filter((u) => !sentUuids.has(u)).length,
    committed: await committedSum(),
    incarnations,
  };
}
