/**
 * What ClickHouse stores from the fast path equals what it stores from rows.ts's rows: the same records
 * inserted both ways (mapEventRecord's objects as JSONEachRow straight into a copy of the events table;
 * encodeEvent's TabSeparated bytes into another copy through its Null input table and view, as the sink
 * does), and the arrivals each copy's view (migration 032's) wrote from them, read back column by column.
 * This is where the text escaping, NULLs, arrays, numbers and timestamps of the TSV have to mean what the
 * JSON meant.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureLines } from '../../test/fixtures/index.js';
import { randomName } from '../../test/support/wait.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { TsvWriter } from '../../platform/store/tsv.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { EVENT_COLUMNS, encodeEvent } from './event-tsv.js';
import { ensureEventsInput, inputTable } from './events-input.js';
import { mapEventRecord } from './rows.js';

const ARRIVAL_COLUMNS = ['org', 'event_type', 'published', 'uuid', 'path', 'first_received', 'copies', 'hook_id'];

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-event-tsv-'));
let store: Store;

beforeAll(async () => {
  store = openStore({ database: randomName('tsv'), dataDir, logger: log });
  await migrate(store, log);
}, 60_000);

afterAll(async () => {
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function values(): string[] {
  const e = JSON.parse(fixtureLines('logevents.valid.jsonl')[5]!) as Record<string, unknown>;
  const odd = (i: number, over: Record<string, unknown>) => JSON.stringify({ ...e, uuid: `odd-${i}`, ...over });
  return [
    ...fixtureLines('logevents.valid.jsonl'),
    ...fixtureLines('logevents.messy.jsonl'),
    odd(1, { displayMessage: 'tab\there, line\nfeed, cr\r, back\\slash, \\N, quote " and \'' }),
    odd(2, { displayMessage: 'ünïcødé \u2028 😀 \u0000 nul', severity: '' }),
    odd(3, { target: [{ id: "it's", type: 'a\\b', alternateId: 'tab\t', displayName: '' }, { id: 5 }, null] }),
    odd(4, { client: { geographicalContext: { geolocation: { lat: -0, lon: 1e-7 } } } }),
    odd(5, { client: { geographicalContext: { geolocation: { lat: '  45.25 ', lon: 1e21 } } } }),
    odd(6, { securityContext: { asNumber: 4294967295, isProxy: true, asOrg: '' } }),
    odd(7, { securityContext: { asNumber: '0', isProxy: false, asOrg: null } }),
    odd(8, { version: 1.5, severity: true, legacyEventType: 123456789012345680000 }),
    odd(9, { client: { ipAddress: '::FFFF:C000:0201', zone: { x: 1 } }, request: { ipChain: [{ ip: '1.2.3.4' }] } }),
    odd(10, { client: { ipAddress: 'null' }, request: { ipChain: [{ ip: 'x' }, { ip: ' 2001:DB8:0::1 ' }] } }),
    `{"uuid":"odd-11","published":"2026-03-01T10:00:00+05:30","eventType":"e","actor":{"id":"a"},"actor":{"type":"T"}}`,
    `{\n\t"uuid" : "ODD-12", "published" : "2026-03-01 10:00:00.5", "eventType":"sp\\u0061ced"\r\n}`,
  ];
}

function record(value: string, offset: number): ConsumedRecord {
  return {
    topic: 't',
    partition: 0,
    offset,
    key: 'acme',
    value: Buffer.from(value),
    headers: {
      [Header.org]: 'acme\there',
      // Some records came by no delivery path: no arrivals row for them.
      [Header.source]: offset % 7 === 0 ? '' : offset % 3 === 0 ? 'system-log' : 'hook',
      [Header.hookId]: offset % 3 === 0 ? '' : 'h\\1',
      [Header.deliveryId]: `d-${offset}`,
      [Header.receivedAt]: offset % 4 === 0 ? 'not a time' : '2026-01-01T00:00:00.123Z',
    },
    timestamp: 1_700_000_000_000 + offset,
  };
}

describe('the fast path stores what rows.ts stores', () => {
  it('every column of events and arrivals, for fixtures and odd values', async () => {
    const db = store.database;
    for (const t of ['ev_json', 'ev_tsv']) await store.command(`CREATE TABLE ${db}.${t} AS ${db}.${EVENTS_TABLE}`);
    for (const t of ['arr_json', 'arr_tsv']) await store.command(`CREATE TABLE ${db}.${t} AS ${db}.arrivals`);
    // The sink's way in: a Null table and its view (migration 013), and each table's arrivals view (032).
    await ensureEventsInput(store, 'ev_tsv', 'arr_tsv');
    await ensureEventsInput(store, 'ev_json', 'arr_json');
    const records = values().map(record);
    const events = new TsvWriter(64);
    const rows: object[] = [];
    let delivered = 0;
    for (const rec of records) {
      const mapped = mapEventRecord(rec);
      const refused = encodeEvent(rec, events);
      expect(refused, rec.value.toString()).toBe(mapped.ok ? null : mapped.reason);
      if (!mapped.ok) continue;
      rows.push(mapped.row);
      if (rec.headers[Header.source] !== '') delivered++;
    }
    expect(rows.length).toBeGreaterThan(130);
    expect(delivered).toBeLessThan(rows.length);
    await store.insertJson('ev_json', rows);
    await store.insertTsv(inputTable('ev_tsv'), EVENT_COLUMNS, events.view());

    const read = (t: string, columns: readonly string[]) =>
      store.query<Record<string, unknown>>(
        `SELECT ${columns.map((c) => `hex(toString(${c})) AS ${c}`).join(', ')} FROM ${db}.${t} ORDER BY ${columns.join(', ')}`,
      );
    const json = await read('ev_json', EVENT_COLUMNS);
    expect(json.length).toBe(rows.length);
    expect(await read('ev_tsv', EVENT_COLUMNS)).toEqual(json);
    const arrived = await read('arr_json', ARRIVAL_COLUMNS);
    expect(arrived.length).toBe(delivered);
    expect(await read('arr_tsv', ARRIVAL_COLUMNS)).toEqual(arrived);
  });

  it('stores a lone surrogate escape in a column as U+FFFD, where the JSON rows were refused whole', async () => {
    const db = store.database;
    await store.command(`CREATE TABLE ${db}.ev_lone AS ${db}.${EVENTS_TABLE}`);
    await ensureEventsInput(store, 'ev_lone', null);
    const e = JSON.parse(fixtureLines('logevents.valid.jsonl')[6]!) as Record<string, unknown>;
    const rec = record(JSON.stringify({ ...e, displayMessage: 'lone \ud800 surrogate' }), 1);
    const mapped = mapEventRecord(rec);
    if (!mapped.ok) throw new Error(mapped.reason);
    // Before: ClickHouse refused the row (so the sink bisected and dead-lettered the event).
    await expect(store.insertJson('ev_lone', [mapped.row])).rejects.toThrow(/CANNOT_PARSE_ESCAPE_SEQUENCE/);
    const events = new TsvWriter(64);
    expect(encodeEvent(rec, events)).toBeNull();
    await store.insertTsv(inputTable('ev_lone'), EVENT_COLUMNS, events.view());
    const [row] = await store.query<{ m: string; raw: string }>(`SELECT display_message AS m, raw FROM ${db}.ev_lone`);
    expect(row!.m).toBe('lone \ufffd surrogate');
    expect(row!.raw).toBe(rec.value.toString('utf8')); // raw keeps the escape as sent
  });
});
