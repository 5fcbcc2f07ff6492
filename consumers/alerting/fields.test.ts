/**
 * Key indexes are cached (by object identity, then by key order): whatever
 * the cache holds, each object must resolve its own keys.
 */
import { describe, expect, it } from 'vitest';
import { compilePath, resolve } from './fields.js';

describe('field paths through cached key indexes', () => {
  it('resolve each object by its own keys, however objects of the same and other shapes interleave', () => {
    const path = compilePath('eventtype');
    const spellings = ['eventType', 'event_type', 'EVENT_TYPE', 'Event_Type', 'eventtype'];
    for (let round = 0; round < 3; round++) {
      spellings.forEach((k, i) => {
        const value = `v${round}.${i}`;
        expect(resolve({ a: 1, [k]: value }, path)).toEqual([value]);
        expect(resolve({ [k]: value, a: 1 }, path)).toEqual([value]);
        expect(resolve({ a: 1, b: { [k]: value } }, compilePath('b.event_type'))).toEqual([value]);
      });
      expect(resolve({ a: 1, other: 'x' }, path)).toEqual([]);
    }
  });

  it('takes the first key in order when two spell the same field', () => {
    const path = compilePath('event_Type');
    expect(resolve({ eventType: 'first', EventType: 'second' }, path)).toEqual(['first']);
    expect(resolve({ EventType: 'second', eventType: 'first' }, path)).toEqual(['second']);
  });
});
