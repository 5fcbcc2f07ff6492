import { describe, expect, it } from 'vitest';
import { messyLogEvents, validLogEvents } from '../../test/fixtures/index.js';
import { splitJsonArray } from './json-array.js';

/** The elements' texts, or null. */
const split = (text: string, from?: number) =>
  splitJsonArray(Buffer.from(text), from)?.map((b) => b.toString()) ?? null;

describe('splitJsonArray', () => {
  it('splits the elements as written, bytes kept (escapes, number forms, key order, multi-byte UTF-8)', () => {
    const text = ' [ {"a":"x,]}{\\"y\\\\","n":1.50,"u":"\\u00e9é"} ,\n{"b":[1,[2,{"c":"]"}]]}, 3 ,"s",null ] \n';
    expect(split(text)).toEqual([
      '{"a":"x,]}{\\"y\\\\","n":1.50,"u":"\\u00e9é"}',
      '{"b":[1,[2,{"c":"]"}]]}',
      '3',
      '"s"',
      'null',
    ]);
    expect(JSON.parse(split(text)![0]!)).toEqual({ a: 'x,]}{"y\\', n: 1.5, u: 'éé' });
  });

  it('returns views of the body, not copies, starting at `from`', () => {
    const body = Buffer.from('\uFEFF[{"a":1},2]');
    const parts = splitJsonArray(body, 3)!;
    expect(parts.map((p) => p.toString())).toEqual(['{"a":1}', '2']);
    expect(parts[0]!.buffer).toBe(body.buffer);
    expect(parts[0]!.byteOffset).toBe(body.byteOffset + 4);
    expect(splitJsonArray(body)).toBeNull();
  });

  it('keeps bytes that are not UTF-8 as they are', () => {
    const body = Buffer.concat([Buffer.from('["a'), Buffer.from([0xff, 0xc3]), Buffer.from('",1]')]);
    const parts = splitJsonArray(body)!;
    expect(parts).toHaveLength(2);
    expect([...parts[0]!]).toEqual([0x22, 0x61, 0xff, 0xc3, 0x22]);
  });

  it('round-trips the fixture events, messy ones included: every element parses back to the same event', () => {
    const events = [...validLogEvents(), ...messyLogEvents()];
    const parts = split(JSON.stringify(events, null, 2))!;
    expect(parts.map((p) => JSON.parse(p) as unknown)).toEqual(events);
    expect(split(JSON.stringify(events))).toEqual(events.map((e) => JSON.stringify(e)));
  });

  it('is null for anything but one array', () => {
    expect(split('[]')).toEqual([]);
    expect(split(' [ ] ')).toEqual([]);
    for (const bad of ['', '{}', '[1,]', '[,1]', '[1,,2]', '[1', '[1] x', '["open]', '[}]', '[1]]', 'null']) {
      expect(split(bad), bad).toBeNull();
    }
  });
});
