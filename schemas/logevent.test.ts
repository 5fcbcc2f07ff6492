import { describe, expect, it } from 'vitest';
import { checkLogEvent, describeIssues, logEventFields } from './logevent.js';

const valid = { uuid: 'u-1', published: '2026-11-20T10:00:00.000Z', eventType: 'user.session.start', extra: 1 };

/** What zod alone says of `item`, in checkLogEvent's shape. */
function byZod(item: unknown) {
  const r = logEventFields.safeParse(item);
  return r.success ? { ok: true, published: r.data.published } : { ok: false, reason: describeIssues(r.error) };
}

describe('checkLogEvent', () => {
  // The fast path must never pass what zod refuses, and must say the same of what it refuses.
  it.each([
    ['a valid event', valid],
    ['an offset zone', { ...valid, published: '2026-11-20T10:00:00+05:30' }],
    ['nanoseconds', { ...valid, published: '2026-11-20T10:00:00.123456789Z' }],
    ['no seconds', { ...valid, published: '2026-11-20T10:00Z' }],
    ['no zone', { ...valid, published: '2026-11-20T10:00:00.000' }],
    ['a space for T', { ...valid, published: '2026-11-20 10:00:00.000Z' }],
    ['30 February', { ...valid, published: '2026-02-30T10:00:00.000Z' }],
    ['year 1899', { ...valid, published: '1899-12-31T23:59:59.999Z' }],
    ['published a number', { ...valid, published: 1_700_000_000_000 }],
    ['no published', { uuid: 'u', eventType: 'e' }],
    ['an empty uuid', { ...valid, uuid: '' }],
    ['a uuid of 128', { ...valid, uuid: 'x'.repeat(128) }],
    ['a uuid of 129', { ...valid, uuid: 'x'.repeat(129) }],
    ['a uuid number', { ...valid, uuid: 7 }],
    ['an eventType of 512', { ...valid, eventType: 'e'.repeat(512) }],
    ['an eventType of 513', { ...valid, eventType: 'e'.repeat(513) }],
    ['an empty eventType', { ...valid, eventType: '' }],
    ['a null eventType', { ...valid, eventType: null }],
    ['null', null],
    ['an array', [valid]],
    ['a string', 'event'],
    ['an own __proto__ key', JSON.parse('{"__proto__":{"uuid":"x"},"published":"2026-11-20T10:00:00.000Z"}')],
  ])('%s: the same verdict as zod', (_, item) => {
    expect(checkLogEvent(item)).toEqual(byZod(item));
  });
});
