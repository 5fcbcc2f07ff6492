import { describe, expect, it } from 'vitest';
import { eventEdgeCases } from '../test/support/event-edge-cases.js';
import {
  checkLogEvent,
  describeIssues,
  logEventBytesMeetRules,
  logEventFields,
  logEventFieldsMeetRules,
} from './logevent.js';

const valid = {
  uuid: 'f1d0b993-cc19-11ed-a688-db22c99ef6c4',
  published: '2026-11-20T10:00:00.000Z',
  eventType: 'user.session.start',
  extra: 1,
};

/** What zod alone says of `item`, in checkLogEvent's shape. */
function byZod(item: unknown) {
  const r = logEventFields.safeParse(item);
  return r.success ? { ok: true, published: r.data.published } : { ok: false, reason: describeIssues(r.error) };
}

describe('checkLogEvent', () => {
  // The fast path must never pass what zod refuses, and must say the same of what it refuses.
  it.each([
    ...eventEdgeCases(valid),
    ['nanoseconds', { ...valid, published: '2026-11-20T10:00:00.123456789Z' }],
    ['no seconds', { ...valid, published: '2026-11-20T10:00Z' }],
    ['a space for T', { ...valid, published: '2026-11-20 10:00:00.000Z' }],
    ['year 1899', { ...valid, published: '1899-12-31T23:59:59.999Z' }],
    ['an empty uuid', { ...valid, uuid: '' }],
    ['a uuid of 128', { ...valid, uuid: 'x'.repeat(128) }],
    ['a uuid of 129', { ...valid, uuid: 'x'.repeat(129) }],
    [
      'an own __proto__ key beside published',
      JSON.parse('{"__proto__":{"uuid":"x"},"published":"2026-11-20T10:00:00.000Z"}'),
    ],
  ])('%s: the same verdict as zod', (_, item) => {
    expect(checkLogEvent(item)).toEqual(byZod(item));
  });
});

describe('logEventBytesMeetRules', () => {
  it('takes the values the service sends on their bytes, and never one the rules refuse', () => {
    const uuids = [
      valid.uuid,
      valid.uuid.toUpperCase(),
      'F1D0b993-cc19-11ed-a688-db22c99ef6c4',
      'f1d0b993-cc19-11ed-a688-db22c99ef6c',
      'f1d0b993-cc19-11ed-a688-db22c99ef6c4a',
      'f1d0b993_cc19-11ed-a688-db22c99ef6c4',
      'f1d0b993-cc19-11ed-a688-db22c99ef6g4',
      'f1d0b993cc19-11ed-a688-db22c99ef6c4-',
      'é1d0b993-cc19-11ed-a688-db22c99ef6c',
      '',
    ];
    const published = [
      valid.published,
      '2024-02-29T23:59:59.999Z',
      '2023-02-29T10:00:00.000Z',
      '1899-12-31T23:59:59.999Z',
      '2300-01-01T00:00:00.000Z',
      '2026-11-20T10:00:00Z',
      '2026-11-20T10:00:00.000+00:00',
      '2026-11-20T24:00:00.000Z',
      '2026-11-20t10:00:00.000Z',
      '2026-11-20T10:00:00.000z',
    ];
    const types = [valid.eventType, 'e', 'e'.repeat(512), 'e'.repeat(513), '', 'é', '\u0000x'];
    let taken = 0;
    for (const u of uuids)
      for (const p of published)
        for (const t of types) {
          const parts = [u, p, t].map((v) => Buffer.from(v));
          const b = Buffer.concat(parts);
          const [uEnd, pEnd] = [parts[0]!.length, parts[0]!.length + parts[1]!.length];
          const byBytes = logEventBytesMeetRules(b, 0, uEnd, uEnd, pEnd, pEnd, b.length);
          const byValues = logEventFieldsMeetRules(u, p, t);
          if (byBytes) taken++;
          // The bytes may decline what the values pass (the caller then decodes), never the reverse.
          if (byBytes) expect(byValues, JSON.stringify([u, p, t])).toBe(true);
          const servicesShape = u.length === 36 && p.length === 24 && /^[\x20-\x7e]{1,512}$/.test(t);
          if (servicesShape) expect(byBytes, JSON.stringify([u, p, t])).toBe(byValues);
        }
    expect(taken).toBeGreaterThan(10);
  });
});
