import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { crc32 as crc32Used, crc32Table } from './crc32.js';
import {
  FLAG_SNAPSHOT,
  FRAME_HEADER_BYTES,
  MalformedPayload,
  decodePayload,
  encodeFrame,
  type LogRecord,
} from './frame.js';
import { findLaterFrame } from './frame-reader.js';
import { murmur2, partitionFor } from './partitioner.js';

describe.each([
  ['crc32 (as used: zlib.crc32 where Node has it)', crc32Used],
  ['crc32 (table-driven, for Node before 20.15)', crc32Table],
])('%s', (_, crc32) => {
  it('matches the published CRC-32/ISO-HDLC check values', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32(Buffer.alloc(0))).toBe(0);
    expect(crc32(Buffer.from('a'))).toBe(0xe8b7be43);
    expect(crc32(Buffer.from('The quick brown fox jumps over the lazy dog'))).toBe(0x414fa339);
    expect(crc32(Buffer.alloc(32, 0xff))).toBe(0xff6cab0b);
  });

  it('agrees with the plain bitwise definition on every length and alignment', () => {
    const bitwise = (b: Uint8Array) => {
      let c = 0xffffffff;
      for (const byte of b) {
        c ^= byte;
        for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      }
      return (c ^ 0xffffffff) >>> 0;
    };
    const data = randomBytes(300);
    for (let start = 0; start < 9; start++) {
      for (let len = 0; len < 40; len++)
        expect(crc32(data.subarray(start, start + len))).toBe(bitwise(data.subarray(start, start + len)));
    }
    expect(crc32(data)).toBe(bitwise(data));
  });

  it('continues over split input with a seed', () => {
    const whole = Buffer.from('The quick brown fox jumps over the lazy dog');
    expect(crc32(whole.subarray(10), crc32(whole.subarray(0, 10)))).toBe(crc32(whole));
  });
});

const rec = (key: string | null, value: string, headers: Record<string, string> = {}): LogRecord => ({
  key,
  value: Buffer.from(value),
  headers,
  timestamp: 1_700_000_000_123,
});

describe('frame codec', () => {
  const sections = [
    {
      topic: 'a.logs',
      partition: 2,
      baseOffset: 41,
      records: [rec('org1', '{"x":1}', { 'hooklog-org': 'org1', __proto__x: 'p' }), rec(null, '')],
    },
    { topic: '__offsets', partition: 0, baseOffset: 9_007_199_254_740_000, records: [rec('k', 'v')] },
    { topic: 'b', partition: 0, baseOffset: 5, records: [] },
  ];

  it('round-trips sections, materialising only the ones asked for', () => {
    const frame = encodeFrame(77, FLAG_SNAPSHOT, sections);
    expect(frame.readUInt32BE(0)).toBe(frame.length - FRAME_HEADER_BYTES);
    expect(frame.readUInt32BE(4)).toBe(crc32Table(frame.subarray(FRAME_HEADER_BYTES)));
    const decoded = decodePayload(frame.subarray(FRAME_HEADER_BYTES), (t) => t === 'a.logs');
    expect(decoded.seq).toBe(77);
    expect(decoded.flags).toBe(FLAG_SNAPSHOT);
    expect(decoded.sections.map((s) => [s.topic, s.partition, s.baseOffset, s.count])).toEqual([
      ['a.logs', 2, 41, 2],
      ['__offsets', 0, 9_007_199_254_740_000, 1],
      ['b', 0, 5, 0],
    ]);
    expect(decoded.sections[0]!.records).toEqual(sections[0]!.records);
    expect(decoded.sections[1]!.records).toBeUndefined();
  });

  it('encodes records sharing one headers object like records with their own, and a changed object afresh', () => {
    const shared: Record<string, string> = { 'hooklog-org': 'acme', 'hooklog-received-at': '2026-11-24T12:00:00.000Z' };
    const records = [rec('acme', '{"a":1}', shared), rec('acme', '{"b":2}', { ...shared }), rec('acme', 'é', shared)];
    const encode = () => encodeFrame(3, 0, [{ topic: 't', partition: 0, baseOffset: 0, records }]);
    const frame = encode();
    const own = encodeFrame(3, 0, [
      { topic: 't', partition: 0, baseOffset: 0, records: records.map((r) => ({ ...r, headers: { ...r.headers } })) },
    ]);
    expect(frame.equals(own)).toBe(true);
    expect(decodePayload(frame.subarray(FRAME_HEADER_BYTES), () => true).sections[0]!.records).toEqual(records);
    shared['hooklog-org'] = 'acme-renamed';
    const again = decodePayload(encode().subarray(FRAME_HEADER_BYTES), () => true).sections[0]!.records!;
    expect(again.map((r) => r.headers['hooklog-org'])).toEqual(['acme-renamed', 'acme', 'acme-renamed']);
  });

  it('keeps a header named __proto__ as data', () => {
    const frame = encodeFrame(1, 0, [
      { topic: 't', partition: 0, baseOffset: 0, records: [rec('k', 'v', JSON.parse('{"__proto__":"x"}'))] },
    ]);
    const r = decodePayload(frame.subarray(FRAME_HEADER_BYTES), () => true).sections[0]!.records![0]!;
    expect(Object.keys(r.headers)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(r.headers)).toBe(Object.prototype);
  });

  it('rejects a payload whose structure does not add up', () => {
    const payload = encodeFrame(1, 0, sections).subarray(FRAME_HEADER_BYTES);
    expect(() => decodePayload(payload.subarray(0, payload.length - 3), () => true)).toThrow(MalformedPayload);
    expect(() => decodePayload(Buffer.concat([payload, Buffer.from([0])]))).toThrow(MalformedPayload);
  });

  it('finds a valid later frame behind garbage, and none in pure garbage', () => {
    const later = encodeFrame(12, 0, sections);
    const garbage = Buffer.from('this is not a frame at all, just noise');
    expect(findLaterFrame(Buffer.concat([garbage, later]), 11)).toBe(garbage.length);
    expect(findLaterFrame(Buffer.concat([garbage, later]), 13)).toBeUndefined();
    expect(findLaterFrame(Buffer.concat([garbage, later.subarray(0, later.length - 1)]), 11)).toBeUndefined();
  });
});

describe('partitioner', () => {
  it("computes Kafka's murmur2 (vectors from Kafka's UtilsTest.testMurmur2)", () => {
    const vectors: Array<[string, number]> = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    for (const [key, hash] of vectors) expect(murmur2(Buffer.from(key))).toBe(hash);
  });

  it("places keys like Kafka's default partitioner and spreads similar keys", () => {
    expect(partitionFor('foobar', 7)).toBe((-790332482 & 0x7fffffff) % 7);
    expect(new Set(['org0', 'org1', 'org2', 'org3'].map((k) => partitionFor(k, 2))).size).toBe(2);
    const used = new Set(Array.from({ length: 200 }, (_, i) => partitionFor(`org${i}`, 8)));
    expect(used.size).toBe(8);
  });
});
