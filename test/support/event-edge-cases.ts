/**
 * Events at the edges of the LogEvent rules (schemas/logevent.ts), for tests
 * that compare a hand-written check with zod's verdict: each fast path must
 * refuse exactly what zod refuses. `valid` is an event that passes; each case
 * changes one thing about it, or is not an object at all.
 */
export function eventEdgeCases(valid: Readonly<Record<string, unknown>>): Array<[string, unknown]> {
  return [
    ['a valid event', valid],
    ['an offset zone', { ...valid, published: '2026-11-20T10:00:00+05:30' }],
    ['no zone', { ...valid, published: '2026-11-20T10:00:00.000' }],
    ['30 February', { ...valid, published: '2026-02-30T10:00:00.000Z' }],
    ['published a number', { ...valid, published: 1_700_000_000_000 }],
    ['no published', { uuid: valid.uuid, eventType: valid.eventType }],
    ['a uuid number', { ...valid, uuid: 7 }],
    ['an eventType of 512', { ...valid, eventType: 'e'.repeat(512) }],
    ['an eventType of 513', { ...valid, eventType: 'e'.repeat(513) }],
    ['an empty eventType', { ...valid, eventType: '' }],
    ['a null eventType', { ...valid, eventType: null }],
    ['null', null],
    ['an array', [valid]],
    ['a string', 'event'],
    ['an own __proto__ key', JSON.parse(`{"__proto__":${JSON.stringify(valid)}}`)],
  ];
}
