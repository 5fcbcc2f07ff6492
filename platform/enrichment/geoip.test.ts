/**
 * GeoIP databases from MMDB files (generated here: test/support/mmdb.ts): answers for IPv4 and IPv6, the event's
 * own location winning, config errors at start, reloads (a replaced file answers anew; a corrupt one keeps the
 * last good database and is counted), and the enrichment header bounded against hostile database strings.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { asnRecord, cityRecord, writeMmdb } from '../../test/support/mmdb.js';
import { HooklogError } from '../errors.js';
import {
  ENRICHMENT_BOUNDS,
  ENRICHMENT_HEADER,
  MAX_ENRICHMENT_HEADER_CHARS,
  encodeEnrichment,
  enrichEvent,
  readEnrichment,
} from './enrichment.js';
import { GeoIp } from './geoip.js';
import { enrichRecords } from './stream.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-geoip-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** Writes `buf` to a fresh file (or over `path`, by rename as download scripts do); returns the path. */
function file(buf: Buffer | string, path = join(dir, `db-${n++}.mmdb`)): string {
  const tmp = `${path}.tmp-${n++}`;
  writeFileSync(tmp, buf);
  renameSync(tmp, path);
  return path;
}

const CITY = writeMmdb('GeoLite2-City', [
  { cidr: '198.51.100.0/24', data: cityRecord('FR', 'Paris', 48.8566, 2.3522) },
  { cidr: '2001:db8:1::/48', data: cityRecord('JP', 'Tokyo', 35.6895, 139.6917) },
]);
const ASN = writeMmdb('GeoLite2-ASN', [
  { cidr: '198.51.100.0/24', data: asnRecord(64500, 'Example Transit') },
  { cidr: '203.0.113.0/24', data: asnRecord(64501, 'Other Net') },
]);

describe('GeoIP databases', () => {
  it('answers city, country, coordinates and AS for IPv4 and IPv6; nothing for addresses not in them', () => {
    const g = new GeoIp({ city: file(CITY), asn: file(ASN) });
    expect(g.geo('198.51.100.7')).toEqual({ country: 'FR', city: 'Paris', lat: 48.8566, lon: 2.3522 });
    expect(g.geo('2001:db8:1::9')).toEqual({ country: 'JP', city: 'Tokyo', lat: 35.6895, lon: 139.6917 });
    expect(g.asn('203.0.113.9')).toEqual({ number: 64501, organization: 'Other Net' });
    expect(g.geo('192.0.2.1')).toBeNull();
    expect(g.asn('2001:db8:1::9')).toBeNull();
    expect(g.geo('not an address')).toBeNull();
  });

  it("enriches an event from its client.ipAddress; the event's own location and AS win", () => {
    const g = new GeoIp({ city: file(CITY), asn: file(ASN) });
    expect(enrichEvent({ client: { ipAddress: '198.51.100.7' } }, g)).toEqual({
      geo: { country: 'FR', city: 'Paris', lat: 48.8566, lon: 2.3522 },
      asn: { number: 64500, organization: 'Example Transit' },
    });
    const located = {
      client: { ipAddress: '198.51.100.7', geographicalContext: { country: 'Germany', city: 'Berlin' } },
    };
    expect(enrichEvent(located, g)).toEqual({ asn: { number: 64500, organization: 'Example Transit' } });
    expect(enrichEvent({ ...located, securityContext: { asNumber: 3320 } }, g)).toBeNull();
    expect(enrichEvent({ client: { ipAddress: '192.0.2.1' } }, g)).toBeNull();
    expect(enrichEvent({ client: { ipAddress: 42 } }, g)).toBeNull();
    expect(enrichEvent({}, g)).toBeNull();
  });

  it('refuses at start a missing file, a file that is no MMDB, and a database of the wrong kind', () => {
    const err = (f: () => unknown): string => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(HooklogError);
        expect((e as HooklogError).code).toBe('CONFIG_INVALID');
        return (e as Error).message;
      }
      throw new Error('no error');
    };
    expect(err(() => new GeoIp({ city: join(dir, 'absent.mmdb') }))).toMatch(/enrichment\.geoip\.city: cannot read/);
    expect(err(() => new GeoIp({ asn: file('198.51.100.0/24\n') }))).toMatch(
      /enrichment\.geoip\.asn: .* is not a MaxMind DB \(MMDB\) file/,
    );
    expect(err(() => new GeoIp({ city: file(ASN) }))).toMatch(
      /enrichment\.geoip\.city: .* is a "GeoLite2-ASN" database; city takes a City or Country database/,
    );
    expect(err(() => new GeoIp({ asn: file(CITY) }))).toMatch(/asn takes an ASN database/);
    // DB-IP's lite databases are taken: their types name what they are.
    const dbip = new GeoIp({
      city: file(
        writeMmdb('DBIP-City-Lite', [{ cidr: '198.51.100.0/24', data: cityRecord('FR', 'Lyon', 45.76, 4.83) }]),
      ),
      asn: file(writeMmdb('DBIP-ASN-Lite (compat=GeoLite2-ASN)', [])),
    });
    expect(dbip.geo('198.51.100.1')?.city).toBe('Lyon');
  });

  it('answers from a replaced file once reloaded; a corrupt file keeps the last good one and is counted once', () => {
    const path = file(CITY);
    const errors: string[] = [];
    const g = new GeoIp({ city: path }, { onError: (d, e) => errors.push(`${d}: ${e.message}`) });
    expect(g.geo('198.51.100.7')?.city).toBe('Paris');
    file(writeMmdb('GeoLite2-City', [{ cidr: '198.51.100.0/24', data: cityRecord('IT', 'Rome', 41.9, 12.5) }]), path);
    g.refresh();
    expect(g.geo('198.51.100.7')).toEqual({ country: 'IT', city: 'Rome', lat: 41.9, lon: 12.5 });
    expect(g.reloadErrors.get('city')).toBeUndefined();

    file(Buffer.from('truncated download'), path);
    g.refresh();
    g.refresh();
    expect(g.geo('198.51.100.7')?.city).toBe('Rome');
    expect(g.reloadErrors.get('city')).toBe(1);
    expect(errors).toEqual([expect.stringMatching(/^city: enrichment\.geoip\.city: .* is not a MaxMind DB/)]);

    rmSync(path);
    g.refresh();
    expect(g.geo('198.51.100.7')?.city).toBe('Rome');
    expect(g.reloadErrors.get('city')).toBe(2);
  });
});

describe('the enrichment header', () => {
  it('is bounded and keeps only known fields of their types, whatever the database holds', () => {
    const hostile = writeMmdb('GeoLite2-City', [
      {
        cidr: '198.51.100.0/24',
        data: {
          city: { names: { en: `${'\u202e'}evil\n${'x'.repeat(10_000)}🙂` } },
          country: { iso_code: 'FRANCE-AND-MORE-THAN-A-CODE' },
          location: { latitude: 1e308, longitude: -12.5 },
          extra: 'ignored',
        },
      },
    ]);
    const asn = writeMmdb('GeoLite2-ASN', [
      {
        cidr: '198.51.100.0/24',
        data: { autonomous_system_number: 'AS1', autonomous_system_organization: 'o'.repeat(5000) },
      },
    ]);
    const g = new GeoIp({ city: file(hostile), asn: file(asn) });
    const [rec] = enrichRecords(
      [{ key: 'o', value: Buffer.from(JSON.stringify({ client: { ipAddress: '198.51.100.1' } })), headers: {} }],
      g,
    );
    const text = rec!.headers[ENRICHMENT_HEADER]!;
    expect(text.length).toBeLessThanOrEqual(MAX_ENRICHMENT_HEADER_CHARS);
    const e = readEnrichment(rec!.headers)!;
    expect(Array.from(e.geo!.city!)).toHaveLength(ENRICHMENT_BOUNDS.city);
    expect(e.geo!.country).toBe('FRANCE-A');
    expect(e.geo!.lat).toBeUndefined();
    expect(e.geo!.lon).toBe(-12.5);
    expect(e.asn).toEqual({ organization: 'o'.repeat(ENRICHMENT_BOUNDS.organization) });
    expect(Object.keys(e.geo!)).toEqual(['country', 'city', 'lon']);
  });

  it('is read only when it is JSON of the known shape and short enough; a split pair is never kept', () => {
    expect(readEnrichment({})).toBeNull();
    expect(readEnrichment({ [ENRICHMENT_HEADER]: 'not json' })).toBeNull();
    expect(readEnrichment({ [ENRICHMENT_HEADER]: '[1]' })).toBeNull();
    expect(
      readEnrichment({ [ENRICHMENT_HEADER]: JSON.stringify({ asn: { number: -1 }, geo: { lat: 'x' } }) }),
    ).toBeNull();
    const long = JSON.stringify({ geo: { city: 'x'.repeat(MAX_ENRICHMENT_HEADER_CHARS) } });
    expect(readEnrichment({ [ENRICHMENT_HEADER]: long })).toBeNull();
    expect(readEnrichment({ [ENRICHMENT_HEADER]: JSON.stringify({ geo: { city: 'a\ud83d' } }) })).toEqual({
      geo: { city: 'a\ufffd' },
    });
    expect(encodeEnrichment({ geo: { city: `${'é'.repeat(127)}🙂🙂` } })).toBe(
      JSON.stringify({ geo: { city: `${'é'.repeat(127)}🙂` } }),
    );
  });

  it('is added only to events that get an answer; the event bytes and other headers stay as they were', () => {
    const g = new GeoIp({ asn: file(ASN) });
    const shared = { 'hooklog-org': 'o' };
    const recs = [
      { key: 'o', value: Buffer.from('{"client":{"ipAddress":"203.0.113.5"}}'), headers: shared },
      { key: 'o', value: Buffer.from('{"client":{"ipAddress":"192.0.2.5"}}'), headers: shared },
      { key: 'o', value: Buffer.from('not json'), headers: shared },
      {
        key: 'o',
        value: Buffer.from('{"client":{"ipAddress":"203.0.113.5"}}'),
        headers: { ...shared, [ENRICHMENT_HEADER]: '{}' },
      },
    ];
    const out = enrichRecords(recs, g);
    expect(out[0]!.value).toBe(recs[0]!.value);
    expect(out[0]!.headers).toEqual({
      'hooklog-org': 'o',
      [ENRICHMENT_HEADER]: '{"asn":{"number":64501,"organization":"Other Net"}}',
    });
    expect(out[1]).toBe(recs[1]);
    expect(out[2]).toBe(recs[2]);
    expect(out[3]).toBe(recs[3]);
  });
});
