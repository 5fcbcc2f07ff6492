import { describe, expect, it } from 'vitest';
import { logEventSchema } from '../schemas/logevent.js';
import { isCanonicalTimestamp, parseTimestamp } from './time.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe('parseTimestamp', () => {
  it('strict: ISO-8601 with a T and a zone, of a real date in 1900..2299', () => {
    const strict = (s: string) => iso(parseTimestamp(s, { strict: true }));
    expect(strict('2026-11-20T10:00:00.000Z')).toBe('2026-11-20T10:00:00.000Z');
    expect(strict('2026-11-20T10:00Z')).toBe('2026-11-20T10:00:00.000Z');
    expect(strict('2026-11-20T11:00:00+01:00')).toBe('2026-11-20T10:00:00.000Z');
    expect(strict('2026-11-20T05:00:00.5-0500')).toBe('2026-11-20T10:00:00.500Z');
    expect(strict('2024-02-29T00:00:00Z')).toBe('2024-02-29T00:00:00.000Z');
    for (const bad of [
      '2026-02-30T10:00:00Z',
      '2026-04-31T10:00:00Z',
      '2025-02-29T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-00-10T10:00:00Z',
      '2026-11-20 10:00:00Z',
      '2026-11-20T10:00:00',
      '2026-11-20T10:00:00+01',
      ' 2026-11-20T10:00:00Z',
      '2026-11-20T10:00:00 Z',
      '2026-11-20t10:00:00Z',
      '1850-01-01T00:00:00Z',
      '2300-01-01T00:00:00Z',
      '2299-12-31T23:00:00-02:00',
      'redacted',
      '',
    ]) {
      expect(strict(bad), bad).toBeNull();
    }
  });

  it('lenient (the sink, query parameters): also a space, no zone (UTC), nanoseconds; seconds required', () => {
    const lenient = (s: unknown) => iso(parseTimestamp(s));
    expect(lenient('2022-03-22 14:21:53.225')).toBe('2022-03-22T14:21:53.225Z');
    expect(lenient('2024-05-02 18:46:21.121000000')).toBe('2024-05-02T18:46:21.121Z');
    expect(lenient(' 2024-05-02T18:46:21Z ')).toBe('2024-05-02T18:46:21.000Z');
    expect(lenient('2024-05-02T20:46:21 +02')).toBe('2024-05-02T18:46:21.000Z');
    for (const bad of ['2026-02-30 10:00:00', '2026-11-20 10:00', '2026-01-01 24:00:00', 1_700_000_000_000, null])
      expect(lenient(bad), String(bad)).toBeNull();
  });

  it('reads the canonical form (what the service sends) by its fast path exactly as the general one', () => {
    // The same instant written with +00:00 takes the regular-expression path: both must agree, valid or not.
    const general = (s: string, strict: boolean) => parseTimestamp(s.replace(/Z$/, '+00:00'), { strict });
    const years = [1899, 1900, 1901, 1999, 2000, 2023, 2024, 2100, 2298, 2299, 2300, 9999, 0];
    const cases: string[] = [];
    for (const y of years)
      for (let m = 0; m <= 13; m++)
        for (const d of [0, 1, 28, 29, 30, 31, 32])
          cases.push(
            `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}T12:34:56.789Z`,
          );
    for (const t of ['00:00:00.000', '23:59:59.999', '24:00:00.000', '23:60:00.000', '23:59:60.000', '1a:00:00.000'])
      cases.push(`2026-11-20T${t}Z`);
    cases.push(
      '2026-11-20T10:00:00.000z',
      '2026-11-20t10:00:00.000Z',
      '2026-11-20 10:00:00.000Z',
      '2026/11/20T10:00:00.000Z',
    );
    cases.push(
      '-026-11-20T10:00:00.000Z',
      '2026-11-20T10:00:00,000Z',
      '2026-1-020T10:00:00.000Z',
      '２026-11-20T10:00:00.000Z',
    );
    let valid = 0;
    for (const s of cases) {
      for (const strict of [true, false])
        expect(parseTimestamp(s, { strict }), `${s} strict ${strict}`).toBe(general(s, strict));
      if (parseTimestamp(s, { strict: true }) !== null) valid++;
      // The same form read on bytes (readers of JSON that do not decode): true exactly when it is taken.
      const b = Buffer.from(`"${s}"`);
      expect(isCanonicalTimestamp(b, 1, b.length - 1), s).toBe(parseTimestamp(s, { strict: true }) !== null);
    }
    expect(valid).toBeGreaterThan(300);
    expect(parseTimestamp('2024-02-29T23:59:59.999Z')).toBe(Date.UTC(2024, 1, 29, 23, 59, 59, 999));
    expect(parseTimestamp('1900-02-29T00:00:00.000Z')).toBeNull();
    expect(parseTimestamp('2000-02-29T00:00:00.000Z')).toBe(Date.UTC(2000, 1, 29));
  });

  it('is what the LogEvent schema checks published with: 2026-02-30 is refused', () => {
    const event = (published: string) => ({
      uuid: 'f1d0b993-cc19-11ed-a688-db22c99ef6c4',
      eventType: 'user.session.start',
      published,
    });
    expect(logEventSchema.safeParse(event('2026-02-28T10:00:00Z')).success).toBe(true);
    expect(logEventSchema.safeParse(event('2026-02-30T10:00:00Z')).success).toBe(false);
  });
});
