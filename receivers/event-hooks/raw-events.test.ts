/**
 * Each event's record value is its own bytes from the delivery body: found by
 * one scan (raw-events.ts) that must agree with JSON.parse on every body
 * JSON.parse accepts, and never re-serialised.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/support/random.js';
import { parseDelivery } from './delivery.js';
import { nestingExceeds } from '../body.js';
import { scanDelivery } from './raw-events.js';

const eventRanges = (body: Buffer) => scanDelivery(body).ranges;

const texts = (body: Buffer) => eventRanges(body)?.map(([s, e]) => body.toString('utf8', s, e));
const ctx = { org: 'acme', hookId: 'h1', receivedAt: new Date('2026-11-24T08:00:00Z') };

function event(i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    uuid: `0b1c2d3e-4f50-11ef-8a9b-${String(i).padStart(12, '0')}`,
    published: '2026-11-24T07:59:59.123Z',
    eventType: 'user.session.start',
    version: '0',
    severity: 'INFO',
    displayMessage: 'User login to Okta',
    actor: { id: '00u1', type: 'User', alternateId: 'a@example.com', displayName: 'A' },
    outcome: { result: 'SUCCESS', reason: null },
    ...extra,
  };
}

describe('eventRanges', () => {
  it('finds each event exactly as written: whitespace, escapes, brackets in strings, number spellings', () => {
    const body = Buffer.from(
      '\ufeff { "eventType" : "com.okta.event_hook", "data" : { "other": [1, {"events": []}], "events" : [\n' +
        '  {"n": 1.50, "e": 1E3, "s": "q\\"]},[{\\\\", "u": "\\u00e9\\u2028", "x": "é"} ,\n' +
        '  [ 1 , 2 ] , "str" , -0.0 , true , null , {}\n] } }',
    );
    expect(JSON.parse(body.toString('utf8').slice(1)).data.events).toHaveLength(7);
    expect(texts(body)).toEqual([
      '{"n": 1.50, "e": 1E3, "s": "q\\"]},[{\\\\", "u": "\\u00e9\\u2028", "x": "é"}',
      '[ 1 , 2 ]',
      '"str"',
      '-0.0',
      'true',
      'null',
      '{}',
    ]);
  });

  it('reads keys as JSON.parse does: the last of repeated keys, escaped spellings', () => {
    const twice = Buffer.from('{"data":{"events":[1]},"data":{"events":[2,3],"events":[4]}}');
    expect(JSON.parse(twice.toString()).data.events).toEqual([4]);
    expect(texts(twice)).toEqual(['4']);
    const escaped = Buffer.from('{"d\\u0061ta":{"ev\\u0065nts":[{"a":1}]}}');
    expect(texts(escaped)).toEqual(['{"a":1}']);
    expect(texts(Buffer.from('{"data":{"events":[]}}'))).toEqual([]);
    expect(eventRanges(Buffer.from('{"data":{"events":{}}}'))).toBeNull();
    expect(eventRanges(Buffer.from('[1]'))).toBeNull();
  });

  it('agrees with JSON.parse on generated deliveries of every layout', () => {
    const rand = seededRandom(15);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
    const strings = ['plain', 'quote " and \\ backslash', '] } , { [', 'é ✓ 𝄞', '\u2028\n\t', '\\"', ''];
    for (let round = 0; round < 200; round++) {
      const events = Array.from({ length: Math.floor(rand() * 6) }, (_, i) =>
        event(i, {
          note: pick(strings),
          n: pick([0, -1.5, 1e21, 123456789]),
          list: [pick(strings), { deep: [[pick(strings)]] }],
        }),
      );
      const delivery = { eventType: 'com.okta.event_hook', eventId: `e${round}`, data: { events } };
      const body = Buffer.from(JSON.stringify(delivery, null, pick([0, 1, 2, '\t'])));
      const found = texts(body);
      expect(found).toHaveLength(events.length);
      found!.forEach((t, i) => expect(JSON.parse(t)).toEqual(events[i]));
      expect(scanDelivery(body).depth).toBe(depthOf(body));
    }
  });

  it('measures the depth the separate nesting walk measures, whatever the shape, brackets in strings aside', () => {
    const bodies = [
      '"just a string"',
      '42',
      '[]',
      '[[[["[[[["]]]]',
      '{"data":{"events":[]}}',
      '{"data":{"events":[[[[[1]]]]]}}',
      '{"data":{"events":{"a":[[{}]]}}}',
      '{"other":[[[[[[[[[]]]]]]]]],"data":{"events":[{"a":"]]]]{{{{\\"[["}]}}',
      '{"data":1,"data":{"events":[{"x":[{"y":[]}]}]}}',
      `{"data":{"events":[${'['.repeat(300)}${']'.repeat(300)}]}}`,
      `[${'{"a":'.repeat(200)}1${'}'.repeat(200)}]`,
    ];
    for (const text of bodies) {
      const body = Buffer.from(text);
      expect(() => JSON.parse(text), text).not.toThrow();
      expect(scanDelivery(body).depth, text.slice(0, 60)).toBe(depthOf(body));
    }
  });
});

/** The depth by body.ts's nestingExceeds, searched for: the least `max` it does not exceed. */
function depthOf(body: Buffer): number {
  let max = 0;
  while (nestingExceeds(body, max)) max++;
  return max;
}

describe('parseDelivery record values', () => {
  it("are the events' own bytes, valid and dead-lettered alike, never re-serialised", () => {
    const good =
      '{ "uuid" : "0b1c2d3e-4f50-11ef-8a9b-000000000001", "published":"2026-11-24T07:59:59.123Z", "eventType":"user.session.start", "severity":"INFO", "score": 1.50, "displayMessage":"\\u00e9" }';
    const bad = '{"uuid":"123","published":"2026-11-24T07:59:59Z","eventType":"x", "n": 2.0}';
    const body = Buffer.from(`{"eventType":"com.okta.event_hook","eventId":"d1","data":{"events":[${good},\n${bad}]}}`);
    const parsed = parseDelivery(body, ctx);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.events.map((r) => r.value.toString())).toEqual([good]);
    expect(parsed.rejected.map((r) => r.value.toString())).toEqual([bad]);
    expect(parsed.events[0]!.headers).toMatchObject({ 'hooklog-org': 'acme', 'hooklog-delivery-id': 'd1' });
  });
});
