/**
 * Arrivals on real embedded ClickHouse (chdb): which paths delivered each
 * event and when each first did, written by the sink's insert path beside
 * the one-row-per-(org, uuid) events table, and exactly once when a batch is
 * delivered again (a crash between insert and commit).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logEvent } from '../../test/simulated-org/generate.js';
import { randomName } from '../../test/support/wait.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord, RecordBatch } from '../../platform/stream/types.js';
import { eventsPipeline } from './sink.js';
import { createSinkTelemetry } from '../../platform/store/table-writer-telemetry.js';
import { writeBatch, type WriterDeps } from '../../platform/store/table-writer.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-arrivals-'));
let store: Store;

beforeAll(async () => {
  store = openStore({ database: randomName('arr'), dataDir, logger: log });
  await migrate(store, log);
  // Merges stopped: a count without FINAL shows exactly what was inserted.
  await store.command(`SYSTEM STOP MERGES ${store.database}.arrivals`);
}, 60_000);

afterAll(async () => {
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function rec(
  offset: number,
  event: Record<string, unknown>,
  org: string,
  source: string,
  receivedAt: string,
): ConsumedRecord {
  return {
    topic: 't.logs',
    partition: 0,
    offset,
    key: org,
    value: Buffer.from(JSON.stringify(event)),
    headers: {
      [Header.org]: org,
      [Header.source]: source,
      [Header.hookId]: source === 'hook' ? 'h1' : '',
      [Header.receivedAt]: receivedAt,
    },
    timestamp: Date.parse(receivedAt),
  };
}

describe('arrivals', () => {
  it('records each path once with its first receipt, beside one events row per (org, uuid); a redelivered batch adds nothing', async () => {
    const org = randomName('acme');
    const a: Record<string, unknown> = { ...logEvent(0), published: '2026-11-20T10:00:00.000Z' };
    const b: Record<string, unknown> = { ...logEvent(1), published: '2026-11-20T10:00:01.000Z' };
    const [ua, ub] = [String(a.uuid), String(b.uuid)];
    const batch: RecordBatch = {
      topic: 't.logs',
      partition: 0,
      firstOffset: 0,
      lastOffset: 4,
      records: [
        rec(0, a, org, 'hook', '2026-11-20T10:00:02.000Z'),
        rec(1, a, org, 'hook', '2026-11-20T10:00:01.500Z'), // a retried delivery that got in first
        rec(2, a, org, 'system-log', '2026-11-20T10:05:00.000Z'),
        rec(3, b, org, 'system-log', '2026-11-20T10:05:00.000Z'),
        rec(4, b, org, 'backfill', '2026-11-21T08:00:00.000Z'),
      ],
    };
    const deps: WriterDeps = {
      store,
      stream: null as never,
      deadletterTopic: 't.deadletter',
      telemetry: createSinkTelemetry(log),
      signal: new AbortController().signal,
    };
    const pipeline = eventsPipeline(EVENTS_TABLE, 'arrivals'); // what the sink runs
    await writeBatch(deps, pipeline, batch);
    await writeBatch(deps, pipeline, batch); // redelivered after a crash before the commit

    const db = store.database;
    const raw = await store.query<{ n: string }>(`SELECT count() AS n FROM ${db}.arrivals WHERE org = {org:String}`, {
      org,
    });
    // One insert of the 5 records' rows (the sink leaves folding to merges and FINAL); the second was
    // dropped by its token.
    expect(Number(raw[0]!.n)).toBe(5);
    const rows = await store.query<{ uuid: string; path: string; first: string; copies: string; hook_id: string }>(
      `SELECT uuid, path, toString(min(first_received)) AS first, toString(sum(copies)) AS copies, any(hook_id) AS hook_id
       FROM ${db}.arrivals WHERE org = {org:String} GROUP BY uuid, path ORDER BY uuid = {a:String} DESC, path`,
      { org, a: ua },
    );
    expect(rows.map((r) => [r.uuid, r.path, r.first, r.copies])).toEqual([
      [ua, 'hook', '2026-11-20 10:00:01.500', '2'],
      [ua, 'system-log', '2026-11-20 10:05:00.000', '1'],
      [ub, 'backfill', '2026-11-21 08:00:00.000', '1'],
      [ub, 'system-log', '2026-11-20 10:05:00.000', '1'],
    ]);
    const events = await store.query<{ n: string }>(`SELECT count() AS n FROM ${db}.events WHERE org = {org:String}`, {
      org,
    });
    expect(Number(events[0]!.n)).toBe(2);
    const folded = await store.query<{ n: string }>(
      `SELECT count() AS n FROM ${db}.arrivals FINAL WHERE org = {org:String}`,
      { org },
    );
    expect(Number(folded[0]!.n)).toBe(4);
  });
});
