import { describe, expect, it } from 'vitest';
import { eventEdgeCases } from '../test/support/event-edge-cases.js';
import { checkLogEvent, describeIssues, logEventFields } from './logevent.js';

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
