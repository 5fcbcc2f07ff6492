import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPORA_DIR } from '../../test/support/corpus.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { clientIp, dedupToken, formatDateTime64, mapDeadletterRecord, mapEventRecord, parseTimestamp, type EventRow } from './rows.js';

const lines = (file: string) => readFileSync(join(CORPORA_DIR, file), 'utf8').split('\n').filter((l) => l.trim() !== '');

const headers = {
  [Header.org]: 'acme',
  [Header.source]: 'hook',
  [Header.hookId]: 'hook-1',
  [Header.deliveryId]: 'dlv-9',
  [Header.receivedAt]: '2024-10-15T02:30:46.500Z',
};

function record(value: Buffer | string, over: Partial<ConsumedRecord> = {}): ConsumedRecord {
  return { topic: 'hl.logs', partition: 2, offset: 41, key: 'acme', value: Buffer.isBuffer(value) ? value : Buffer.from(value), headers, timestamp: 1_700_000_000_000, ...over };
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

describe('mapEventRecord fields', () => {
  const first = JSON.parse(lines('logevents.valid.jsonl')[0]!) as Record<string, unknown>;

  it('copies the typed columns and hooklog metadata', () => {
    const row = mapped(first);
    expect(row).toMatchObject({
      org: 'acme', source: 'hook', hook_id: 'hook-1', delivery_id: 'dlv-9', received_at: '2024-10-15 02:30:46.500',
      uuid: '82a42325-f290-11ec-b1c2-078cc65ecd5e', published: '2022-06-23 01:05:02.265',
      event_type: 'application.lifecycle.update', version: '0', severity: 'INFO', display_message: 'Update application',
      legacy_event_type: 'app.generic.config.app_updated',
      actor_id: '00us5ty22kvu4NAxo4x6', actor_type: 'User', actor_alternate_id: 'austin.kelleher@jupiterone.com', actor_display_name: 'Austin Kelleher',
      client_ip: '136.56.2.241', client_browser: 'CHROME', client_os: 'Mac OS X', client_zone: 'null', client_device: 'Computer',
      as_number: 16591, as_org: 'google', is_proxy: false,
      geo_country: 'United States', geo_state: 'North Carolina', geo_city: 'Raleigh', geo_postal_code: '27607', geo_lat: 35.797, geo_lon: -78.6865,
      outcome_result: 'SUCCESS', outcome_reason: '',
      target_id: ['0oa7s4dqka0lUpE5W4x7'], target_type: ['AppInstance'], target_alternate_id: ['jupiterone.dev Google Workspace'], target_display_name: ['Google Workspace'],
      transaction_id: 'YrO8PS5MqigrMEXMDEbP5AAADQ0', transaction_type: 'WEB', external_session_id: '102IpY-x4JNQCqoTkhj_u3n9w', root_session_id: '',
    });
    expect(row.client_user_agent).toMatch(/^Mozilla\/5\.0 \(Macintosh/);
  });

  it('tolerates wrong types: numbers stringified, objects and arrays where strings belong ignored', () => {
    const row = mapped({
      ...first,
      version: 0,
      severity: { level: 'INFO' },
      displayMessage: ['x'],
      client: { ipAddress: 12, zone: true, geographicalContext: { postalCode: 27607, geolocation: { lat: '35.5', lon: { x: 1 } } } },
      target: [null, 'str', { id: 7, type: null }, []],
      authenticationContext: 'nope',
      request: undefined, // no ipChain to fall back on
    });
    expect(row).toMatchObject({
      version: '0', severity: '', display_message: '', client_ip: '::', client_zone: 'true', geo_postal_code: '27607',
      geo_lat: 35.5, geo_lon: null, target_id: ['7'], target_type: [''], target_alternate_id: [''], target_display_name: [''], external_session_id: '',
    });
  });

  it('copes with every optional part missing or null, and with missing headers', () => {
    const r = mapEventRecord(record(JSON.stringify({ uuid: 'u-1', published: '2024-01-01T00:00:00Z', actor: null, client: null, target: null }), { headers: {} }));
    expect(r.ok && r.row).toMatchObject({ org: '', source: '', event_type: '', geo_lat: null, target_id: [], received_at: '2023-11-14 22:13:20.000' });
  });

  it('refuses what cannot be a row, saying why', () => {
    const reason = (v: Buffer | string) => {
      const r = mapEventRecord(record(v));
      return r.ok ? 'mapped' : r.reason;
    };
    expect(reason('{"uuid": "a", "published": ')).toMatch(/not valid JSON/);
    expect(reason('[{"uuid":"a"}]')).toMatch(/not a JSON object/);
    expect(reason('null')).toMatch(/not a JSON object/);
    expect(reason('"text"')).toMatch(/not a JSON object/);
    expect(reason(Buffer.from([0x7b, 0xff, 0x7d]))).toMatch(/UTF-8/);
    expect(reason('\ufeff{"uuid":"a","published":"2024-01-01T00:00:00Z"}')).toMatch(/not valid JSON/); // a BOM is not silently dropped
    expect(reason('{"uuid": "", "published": "2024-01-01T00:00:00Z"}')).toMatch(/uuid/);
    expect(reason('{"uuid": {"id": 1}, "published": "2024-01-01T00:00:00Z"}')).toMatch(/uuid/);
    expect(reason(`{"uuid": "${'x'.repeat(300)}", "published": "2024-01-01T00:00:00Z"}`)).toMatch(/uuid/);
    expect(reason('{"uuid": "a", "published": 1704067200000}')).toMatch(/published/);
    expect(reason('{"uuid": "a", "published": "1850-01-01T00:00:00Z"}')).toMatch(/published/);
    expect(reason('{"uuid": 12345, "published": "2024-01-01T00:00:00Z"}')).toBe('mapped');
  });
});

describe('clientIp (the v2 IPv6 column)', () => {
  it('keeps valid IPv4 and IPv6 addresses and turns anything else into ::', () => {
    expect(clientIp('136.56.2.241')).toBe('136.56.2.241');
    expect(clientIp(' 2001:db8::1 ')).toBe('2001:db8::1');
    for (const bad of ['redacted', '', null, 12, '999.1.1.1', '10.0.0.1, 10.0.0.2', { ip: '1.2.3.4' }]) expect(clientIp(bad), String(bad)).toBe('::');
  });
});

describe('timestamps', () => {
  it('parses the shapes the feeds send, as UTC unless an offset says otherwise', () => {
    const at = (s: unknown) => {
      const ms = parseTimestamp(s);
      return ms === null ? null : formatDateTime64(ms);
    };
    expect(at('2022-06-23T01:05:02.265Z')).toBe('2022-06-23 01:05:02.265');
    expect(at('2021-06-25T21:27:03.49Z')).toBe('2021-06-25 21:27:03.490');
    expect(at('2022-03-22 14:21:53.225')).toBe('2022-03-22 14:21:53.225');
    expect(at('2024-05-02 18:46:21.121999999')).toBe('2024-05-02 18:46:21.121');
    expect(at('2024-01-01T00:00:00')).toBe('2024-01-01 00:00:00.000');
    expect(at('2024-01-01T02:00:00+02:00')).toBe('2024-01-01 00:00:00.000');
    expect(at('2024-01-01T00:30:00.5-0130')).toBe('2024-01-01 02:00:00.500');
    for (const bad of ['redacted', '', null, 17, '2023-02-30T00:00:00Z', '2024-13-01 00:00:00', '2024-01-01T24:00:00Z', '2300-01-01T00:00:00Z', '2024-01-01']) {
      expect(at(bad), String(bad)).toBeNull();
    }
  });
});

describe('dedupToken and dead letters', () => {
  it('names the offset range of one partition of one topic', () => {
    expect(dedupToken('hl.logs', 3, 100, 199)).toBe('hl.logs-3-100-199');
  });

  it('maps a dead letter with where it was read, its reason and origin', () => {
    const r = mapDeadletterRecord(
      record('{"not":"an event"}', {
        topic: 'hl.deadletter', partition: 1, offset: 7,
        headers: { ...headers, [Header.reason]: 'event has no uuid', [Header.origin]: 'clickhouse-sink', [Header.originalTopic]: 'hl.logs', [Header.originalPartition]: '2', [Header.originalOffset]: '41' },
      }),
    );
    expect(r).toEqual({
      ok: true,
      row: { received_at: '2024-10-15 02:30:46.500', origin: 'clickhouse-sink', reason: 'event has no uuid', topic: 'hl.logs', partition: 2, offset: 41, org: 'acme', raw: '{"not":"an event"}', dl_partition: 1, dl_offset: 7 },
    });
    const bare = mapDeadletterRecord(record('x', { headers: {}, partition: 0, offset: 3 }));
    expect(bare.ok && bare.row).toMatchObject({ topic: '', partition: 0, offset: 0, origin: '', reason: '', dl_offset: 3 });
  });
});
