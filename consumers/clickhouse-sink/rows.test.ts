import { describe, expect, it } from 'vitest';
import { fixtureLines } from '../../test/fixtures/index.js';
import { Header, deadLetter } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { clientIp, mapDeadletterRecord, mapEventRecord, type EventRow } from './rows.js';
import { dedupToken } from '../../platform/store/table-writer.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';

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

describe('mapEventRecord fields', () => {
  const first = JSON.parse(
    fixtureLines('logevents.valid.jsonl').find((l) => l.includes('"application.lifecycle.update"'))!,
  ) as Record<string, unknown>;

  it('copies the typed columns and hooklog metadata', () => {
    const row = mapped(first);
    expect(row).toMatchObject({
      org: 'acme',
      source: 'hook',
      hook_id: 'hook-1',
      delivery_id: 'dlv-9',
      received_at: '2024-10-15 02:30:46.500',
      uuid: '93489d21-7149-4ee2-abef-fa3e040d8a11',
      published: '2025-01-09 00:07:27.519',
      event_type: 'application.lifecycle.update',
      version: '0',
      severity: 'INFO',
      display_message: 'Update application',
      legacy_event_type: 'app.generic.config.app_updated',
      actor_id: '00uacme0taro00000004x7',
      actor_type: 'User',
      actor_alternate_id: 'taro.yamada@acme.example',
      actor_display_name: '山田 太郎',
      client_ip: '2001:db8::42',
      client_browser: 'CHROME',
      client_os: 'Mac OS X',
      client_zone: 'null',
      client_device: 'Computer',
      as_number: 64497,
      as_org: 'example cloud',
      is_proxy: false,
      geo_country: 'Germany',
      geo_state: 'Land Berlin',
      geo_city: 'Berlin',
      geo_postal_code: '10115',
      geo_lat: 52.52,
      geo_lon: 13.405,
      outcome_result: 'SUCCESS',
      outcome_reason: null, // null in the event: unknown, not ''
      target_id: ['0oaacmewiki000000x7'],
      target_type: ['AppInstance'],
      target_alternate_id: ['Acme Wiki'],
      target_display_name: ['Acme Wiki'],
      transaction_id: 'dXB9KX5DV1lWJ46mKbkw1XtnD7k',
      transaction_type: 'WEB',
      external_session_id: '102wJg7pIMkBNCqJaCY0OURjq',
      root_session_id: null,
    });
    expect(row.client_user_agent).toMatch(/^Mozilla\/5\.0 \(Macintosh/);
  });

  it('tolerates wrong types: numbers stringified, objects and arrays where strings belong unknown (null)', () => {
    const row = mapped({
      ...first,
      version: 0,
      severity: { level: 'INFO' },
      displayMessage: ['x'],
      client: {
        ipAddress: 12,
        zone: true,
        geographicalContext: { postalCode: 27607, geolocation: { lat: '35.5', lon: { x: 1 } } },
      },
      target: [null, 'str', { id: 7, type: null }, []],
      authenticationContext: 'nope',
      request: undefined, // no ipChain to fall back on
    });
    expect(row).toMatchObject({
      version: '0',
      severity: null,
      display_message: null,
      client_ip: null,
      client_zone: 'true',
      geo_postal_code: '27607',
      geo_lat: 35.5,
      geo_lon: null,
      target_id: ['7'],
      target_type: [''],
      target_alternate_id: [''],
      target_display_name: [''],
      external_session_id: null,
    });
  });

  it('copes with every optional part missing or null, and with missing headers', () => {
    const r = mapEventRecord(
      record(
        JSON.stringify({ uuid: 'u-1', published: '2024-01-01T00:00:00Z', actor: null, client: null, target: null }),
        { headers: {} },
      ),
    );
    expect(r.ok && r.row).toMatchObject({
      org: '',
      source: '',
      event_type: '',
      geo_lat: null,
      target_id: [],
      received_at: '2023-11-14 22:13:20.000',
    });
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

describe('clientIp', () => {
  it('keeps valid IPv4 and IPv6 addresses and turns anything else into null', () => {
    expect(clientIp('136.56.2.241')).toBe('136.56.2.241');
    expect(clientIp(' 2001:db8::1 ')).toBe('2001:db8::1');
    for (const bad of ['redacted', '', null, 12, '999.1.1.1', '10.0.0.1, 10.0.0.2', { ip: '1.2.3.4' }])
      expect(clientIp(bad), String(bad)).toBeNull();
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
    for (const bad of [
      'redacted',
      '',
      null,
      17,
      '2023-02-30T00:00:00Z',
      '2024-13-01 00:00:00',
      '2024-01-01T24:00:00Z',
      '2300-01-01T00:00:00Z',
      '2024-01-01',
    ]) {
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
        topic: 'hl.deadletter',
        partition: 1,
        offset: 7,
        headers: {
          ...headers,
          [Header.reason]: 'event has no uuid',
          [Header.origin]: 'clickhouse-sink',
          [Header.originalTopic]: 'hl.logs',
          [Header.originalPartition]: '2',
          [Header.originalOffset]: '41',
        },
      }),
    );
    expect(r).toEqual({
      ok: true,
      row: {
        received_at: '2024-10-15 02:30:46.500',
        origin: 'clickhouse-sink',
        reason: 'event has no uuid',
        topic: 'hl.logs',
        partition: 2,
        offset: 41,
        org: 'acme',
        raw: '{"not":"an event"}',
        dl_partition: 1,
        dl_offset: 7,
      },
    });
    const bare = mapDeadletterRecord(record('x', { headers: {}, partition: 0, offset: 3 }));
    expect(bare.ok && bare.row).toMatchObject({
      topic: '',
      partition: 0,
      offset: 0,
      origin: '',
      reason: '',
      dl_offset: 3,
    });
  });
});

describe('dead letters carry their error code', () => {
  it("in a header, and at the head of the deadletter row's reason (once)", () => {
    const letter = deadLetter(Buffer.from('{"published":"x"}'), 'event has no uuid', 'event-hook');
    expect(letter.headers[Header.errorCode]).toBe('RECORD_INVALID');
    const rejected = deadLetter(
      Buffer.from('{}'),
      'STORE_REJECTED_ROW: rejected by ClickHouse',
      'clickhouse-sink',
      {},
      null,
      'STORE_REJECTED_ROW',
    );
    const row = (h: Record<string, string>) => {
      const r = mapDeadletterRecord(record('{}', { headers: h }));
      if (!r.ok) throw new Error(r.reason);
      return r.row.reason;
    };
    expect(row(letter.headers)).toBe('RECORD_INVALID: event has no uuid');
    expect(row(rejected.headers)).toBe('STORE_REJECTED_ROW: rejected by ClickHouse');
    expect(row({ [Header.reason]: 'no code header' })).toBe('no code header');
  });
});
