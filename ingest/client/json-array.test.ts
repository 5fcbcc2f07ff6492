import { describe, expect, it } from 'vitest';
import { messyLogEvents, validLogEvents } from '../../test/fixtures/index.js';
import { splitJsonArray } from './json-array.js';

describe('splitJsonArray', () => {
  it('splits the elements as written, bytes kept (escapes, number forms, key order)', () => {
    const text = ' [ {"a":"x,]}{\\"y\\\\","n":1.50,"u":"\\u00e9"} ,\n{"b":[1,[2,{"c":"]"}]]}, 3 ,"s",null ] \n';
    expect(splitJsonArray(text)).toEqual([
      '{"a":"x,]}{\\"y\\\\","n":1.50,"u":"\\u00e9"}',
      '{"b":[1,[2,{"c":"]"}]]}',
      '3',
      '"s"',
      'null',
    ]);
    expect(JSON.parse(splitJsonArray(text)![0]!)).toEqual({ a: 'x,]}{"y\\', n: 1.5, u: 'é' });
  });

  it('round-trips the fixture events, messy ones included: every element parses back to the same event', () => {
    const events = [...validLogEvents(), ...messyLogEvents()];
    const parts = splitJsonArray(JSON.stringify(events, null, 2))!;
    expect(parts.map((p) => JSON.parse(p) as unknown)).toEqual(events);
    expect(splitJsonArray(JSON.stringify(events))).toEqual(events.map((e) => JSON.stringify(e)));
  });

  it('is null for anything but one array', () => {
    expect(splitJsonArray('[]')).toEqual([]);
    expect(splitJsonArray(' [ ] ')).toEqual([]);
    for (const bad of ['', '{}', '[1,]', '[,1]', '[1,,2]', '[1', '[1] x', '["open]', '[}]', '[1]]', 'null']) {
      expect(splitJsonArray(bad), bad).toBeNull();
    }
  });
});
