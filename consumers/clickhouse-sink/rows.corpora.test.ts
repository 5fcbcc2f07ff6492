/** Conformance: the sink's row mapping over the third-party sample events (npm run test:corpora). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPORA_DIR } from '../../test/support/corpus.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { mapEventRecord, type EventRow } from './rows.js';

const lines = (file: string) =>
  readFileSync(join(CORPORA_DIR, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');

const headers = {
  [Header.org]: 'acme',
  [Header.source]: 'hook',
  [Header.hookId]: 'hook-1',
  [Header.deliveryId]: 'dlv-9',
  [Header.receivedAt]: '2024-10-15T02:30:46.500Z',
};

function record(value: Buffer | string, over: Partial<ConsumedRecord> = {}): ConsumedRecord {
  return {
    topic: 'hl.logs',
    partition: 2,
    offset: 41,
    key: 'acme',
    value: Buffer.isBuffer(value) ? value : Buffer.from(value),
    headers,
    timestamp: 1_700_000_000_000,
    ...over,
  };
}

function mapped(value: string | object): EventRow {
  const r = mapEventRecord(record(typeof value === 'string' ? value : JSON.stringify(value)));
  if (!r.ok) throw new Error(`expected a row, got: ${r.reason}`);
  return r.row;
}

describe('mapEventRecord over the corpus', () => {
  it('maps every one of the 127 valid events, raw byte-exact, published as UTC milliseconds', () => {
    const valid = lines('logevents.valid.jsonl');
    expect(valid).toHaveLength(127);
    for (const line of valid) {
      const row = mapped(line);
      const event = JSON.parse(line) as { uuid: string; published: string; eventType: string };
      expect(row.raw).toBe(line);
      expect(row.uuid).toBe(event.uuid);
      expect(row.event_type).toBe(event.eventType);
      expect(row.published).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/);
      expect(Date.parse(`${row.published.replace(' ', 'T')}Z`)).toBe(Date.parse(event.published));
    }
  });

  it('maps or dead-letters (with a reason) every line of the raw corpus: 155 rows, 25 dead letters', () => {
    const all = lines('logevents.jsonl');
    const results = all.map((l) => mapEventRecord(record(l)));
    const rejected = results.flatMap((r, i) => (r.ok ? [] : [{ line: i + 1, reason: r.reason }]));
    expect(results.length - rejected.length).toBe(155);
    expect(rejected).toHaveLength(25);
    for (const r of rejected) expect(r.reason).toMatch(/uuid|published/);
    // Spot checks against the corpus index: no uuid; "published": "redacted"; published null.
    expect(rejected.find((r) => r.line === 113)?.reason).toMatch(/uuid/);
    expect(rejected.find((r) => r.line === 120)?.reason).toMatch(/published/);
    expect(rejected.find((r) => r.line === 121)?.reason).toMatch(/published/);
    for (const [i, r] of results.entries()) if (r.ok) expect(r.row.raw).toBe(all[i]);
  });

  it('reads space-separated and nanosecond timestamps from the raw corpus as UTC', () => {
    const all = lines('logevents.jsonl');
    expect(mapped(all[115]!).published).toBe('2021-01-08 21:28:34.875'); // line 116: "2021-01-08 21:28:34.875"
    expect(mapped(all[116]!).published).toBe('2024-05-02 18:46:21.121'); // line 117: "...21.121000000"
  });
});
