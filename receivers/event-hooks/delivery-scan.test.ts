/**
 * Each event's record value is its own bytes from the delivery body: found by
 * one scan (delivery-scan.ts) that must agree with JSON.parse on every body,
 * and never re-serialised.
 */
import { describe, expect, it } from 'vitest';
import { Kind } from '../../platform/json/lexer.js';
import { checkDelivery, meetsLogEventRules } from '../../schemas/logevent.js';
import { delivery, validLogEvents } from '../../test/fixtures/index.js';
import { corrupted } from '../../test/support/json-corruption.js';
import { seededRandom } from '../../test/support/random.js';
import { MAX_JSON_DEPTH, hookEventProblem, parseDelivery, sourceMatches } from './delivery.js';
import { nestingExceeds, utf8Text } from '../body.js';
import { Envelope, scanDelivery, stringAt } from './delivery-scan.js';

/** The elements' byte ranges of `data.events`, or null when the body holds no such array. */
function eventRanges(body: Buffer): Array<[number, number]> | null {
  const scan = scanDelivery(body);
  if (!scan.valid || scan.envelope[Envelope.events * 3] !== Kind.ARRAY) return null;
  return Array.from({ length: scan.count }, (_, i) => [scan.events[i * 3]!, scan.events[i * 3 + 1]!]);
}

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

describe('scanDelivery: event ranges and depth', () => {
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
      const sent = { eventType: 'com.okta.event_hook', eventId: `e${round}`, data: { events } };
      const body = Buffer.from(JSON.stringify(sent, null, pick([0, 1, 2, '\t'])));
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

  it('agrees with JSON.parse on every byte that ends or breaks a string, at every offset of the four-byte reads', () => {
    // The lexer reads ordinary string bytes four at a time (platform/json/lexer.ts, ordinaryRun): each byte
    // that stops that read, and each neighbour that must not, at every alignment to the body and to the string,
    // in keys and in values, skipped or read, and with the bytes starting at an odd place in a larger buffer.
    const stoppers = [
      ...Array.from({ length: 0x20 }, (_, c) => String.fromCharCode(c)),
      '"',
      '\\',
      '\\"',
      '\\u00e9',
      '\\u00g9',
      '\\x',
    ];
    const ordinary = ['\u007f', ' ', '!', '#', '[', ']', '\\\\', 'é', '𝄞', '\u2028'];
    let checked = 0;
    for (const special of [...stoppers, ...ordinary])
      for (let before = 0; before <= 8; before++)
        for (let after = 0; after <= 5; after++) {
          const s = `${'a'.repeat(before)}${special}${'b'.repeat(after)}`;
          for (const text of [
            `{"data":{"events":[{"uuid":"${s}","x":1}]}}`,
            `{"data":{"events":[{"${s}":1},["${s}"]]}}`,
            `{"other":{"${s}":"${s}"},"data":{"events":[]}}`,
            `{"data":{"events":["${s}"]}}`,
            `{"data":{"events":["${s}`,
          ]) {
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            for (let shift = 0; shift < 4; shift++) {
              // Quotes past the end: a read beyond it would take one for a string's end.
              const bytes = Buffer.byteLength(text);
              const room = Buffer.alloc(shift + bytes + 4, '"');
              room.write(text, shift);
              const body = room.subarray(shift, shift + bytes);
              expect(scanDelivery(body).valid, JSON.stringify(text)).toBe(parsed !== undefined);
              if (parsed !== undefined)
                expect(texts(body)?.map((t) => JSON.parse(t) as unknown)).toEqual(
                  (parsed as { data: { events: unknown[] } }).data.events,
                );
              checked++;
            }
          }
        }
    expect(checked).toBe((stoppers.length + ordinary.length) * 9 * 6 * 5 * 4);
  });
});

/** The depth by body.ts's nestingExceeds, searched for: the least `max` it does not exceed. */
function depthOf(body: Buffer): number {
  let [low, high] = [0, body.length];
  while (low < high) {
    const mid = (low + high) >> 1;
    if (nestingExceeds(body, mid)) low = mid + 1;
    else high = mid;
  }
  return low;
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

/**
 * What parseDelivery decided before the scan, written the plain way: strict UTF-8, JSON.parse of the
 * whole body, the depth walk, the envelope and each parsed event checked by the schemas. The scan must
 * lead parseDelivery to the same verdict, the same words and the same events.
 */
function reference(body: Buffer, expectedSource?: string): unknown {
  const text = utf8Text(body);
  if (!text.ok) return { ok: false, rejection: text.reason, reason: text.detail };
  let json: unknown;
  try {
    json = JSON.parse(text.text);
  } catch (err) {
    return { ok: false, rejection: 'not-json', reason: `body is not JSON: ${(err as Error).message}` };
  }
  if (nestingExceeds(body, MAX_JSON_DEPTH)) return { ok: false, rejection: 'too-deep', reason: expect.any(String) };
  const read = checkDelivery(json);
  if (!read.ok) return { ok: false, rejection: 'not-delivery', reason: `not an event hook delivery: ${read.reason}` };
  if (expectedSource !== undefined && !sourceMatches(read.envelope.source, expectedSource))
    return { ok: false, rejection: 'source-mismatch', reason: expect.any(String) };
  const { eventId, eventID, events } = read.envelope;
  const legacy = typeof eventID === 'string' && eventID.length > 0 && eventID.length <= 256 ? eventID : undefined;
  const problems = events.map((e) => hookEventProblem(e));
  return {
    ok: true,
    deliveryId: eventId ?? legacy,
    events: events.filter((_, i) => problems[i] === undefined),
    rejected: events.flatMap((e, i) => (problems[i] === undefined ? [] : [[e, `data.events.${i}: ${problems[i]}`]])),
  };
}

/** parseDelivery's answer in reference's terms, its record values parsed back. */
function actual(body: Buffer, expectedSource?: string): unknown {
  const p = parseDelivery(body, { ...ctx, expectedSource });
  if (!p.ok) return p;
  for (const r of [...p.events, ...p.rejected])
    expect(body.includes(r.value), 'a record value is bytes of the body').toBe(true);
  return {
    ok: true,
    deliveryId: p.deliveryId,
    events: p.events.map((r) => JSON.parse(r.value.toString('utf8')) as unknown),
    rejected: p.rejected.map((r) => [JSON.parse(r.value.toString('utf8')) as unknown, r.headers['hooklog-reason']]),
  };
}

/** The scan against JSON.parse itself: its verdict, depth, envelope tokens, events and their rules. */
function scanAgrees(body: Buffer): void {
  const label = body.toString('utf8').slice(0, 200);
  const text = utf8Text(body);
  if (!text.ok) return; // the receiver refuses it before scanning
  let json: unknown;
  try {
    json = JSON.parse(text.text);
  } catch {
    expect(scanDelivery(body).valid, label).toBe(false);
    return;
  }
  const scan = scanDelivery(body);
  expect(scan.valid, label).toBe(true);
  expect(scan.depth, label).toBe(depthOf(body));
  const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  expect(scan.object, label).toBe(isObject(json));
  if (!isObject(json)) return;
  const root = json as Record<string, unknown>;
  for (const name of ['eventType', 'eventId', 'eventID', 'source'] as const) {
    const at = Envelope[name] * 3;
    const kind = scan.envelope[at]!;
    const value = Object.hasOwn(root, name) ? root[name] : undefined;
    expect(kind === Kind.ABSENT, `${name}: ${label}`).toBe(value === undefined);
    if (kind === Kind.ABSENT) continue;
    const token = body.toString('utf8', scan.envelope[at + 1]!, scan.envelope[at + 2]!);
    expect(JSON.parse(token), `${name}: ${label}`).toEqual(value);
    expect(stringAt(body, kind, scan.envelope[at + 1]!, scan.envelope[at + 2]!), label).toBe(
      typeof value === 'string' ? value : undefined,
    );
  }
  const data = Object.hasOwn(root, 'data') ? root.data : undefined;
  expect(scan.envelope[Envelope.data * 3] === Kind.OBJECT, label).toBe(isObject(data));
  const events =
    isObject(data) && Object.hasOwn(data as object, 'events') ? (data as { events: unknown }).events : undefined;
  expect(scan.envelope[Envelope.events * 3] === Kind.ARRAY, label).toBe(Array.isArray(events));
  if (!Array.isArray(events)) return;
  expect(scan.count, label).toBe(events.length);
  events.forEach((e, i) => {
    const raw = body.toString('utf8', scan.events[i * 3]!, scan.events[i * 3 + 1]!);
    expect(JSON.parse(raw), label).toEqual(e);
    expect(scan.events[i * 3 + 2] === 1, `event ${i}: ${raw.slice(0, 200)}`).toBe(meetsLogEventRules(e));
  });
}

function both(body: Buffer, expectedSource?: string): void {
  scanAgrees(body);
  expect(actual(body, expectedSource), body.toString('utf8').slice(0, 200)).toEqual(reference(body, expectedSource));
}

describe('parseDelivery decides as JSON.parse and the schemas do', () => {
  const valid = validLogEvents().slice(0, 6);
  const uuid = valid[0]!.uuid;
  const p = '"published":"2026-11-24T07:59:59.123Z"';

  it('on envelopes and events at the edges', () => {
    const d = (events: string, extra = '') =>
      Buffer.from(`{"eventType":"com.okta.event_hook","eventId":"d1"${extra},"data":{"events":[${events}]}}`);
    const bodies: Array<Buffer | string> = [
      d(valid.map((e) => JSON.stringify(e)).join(',')),
      d(`{"uuid":"${uuid}",${p},"eventType":"e"}`),
      d(`{"uu\\u0069d":"${uuid}",${p},"eventType":"\\u0065"}`), // escaped keys and values
      d(`{"uuid":"${uuid.toUpperCase()}",${p},"eventType":"e","uuid":"x"}`), // the last uuid counts
      d(`{"uuid":"x",${p},"eventType":"e","uuid":"${uuid}"}`),
      d(`{"uuid":"${uuid}",${p},"eventType":"${'é'.repeat(512)}"}`), // 512 UTF-16 units in 1,024 bytes
      d(`{"uuid":"${uuid}",${p},"eventType":"${'😀'.repeat(256)}"}`), // 512 units as 256 pairs
      d(`{"uuid":"${uuid}",${p},"eventType":"${'😀'.repeat(256)}x"}`),
      d(`{"uuid":"${uuid}",${p},"eventType":"${'e'.repeat(513)}"}`),
      d(`{"uuid":"${uuid}","published":"2026-11-24T07:59:59.123\\u005a","eventType":"e"}`),
      d(`{"uuid":"${uuid}","published":"2026-02-30T07:59:59.123Z","eventType":"e"}`),
      d(`{"uuid":"${uuid}","published":"2026-11-24T07:59:59+01:00","eventType":"e"}`),
      d(`{"uuid":"${uuid}\\n",${p},"eventType":"e"}`),
      d(`{"uuid":{"a":1},${p},"eventType":["e"]}`),
      d(`{"__proto__":{"uuid":"${uuid}",${p},"eventType":"e"}}`),
      d(`{"uuid":"${uuid}",${p},"eventType":"e","__proto__":{"x":1},"constructor":{}}`),
      d('1, "s", null, true, [], {}, -0.5e3'),
      d(''),
      d(`{"uuid":"${uuid}",${p},"eventType":"e"}`, ',"eventId":"d2"'), // the last eventId counts
      d('{}', `,"eventId":"${'é'.repeat(256)}"`),
      d('{}', `,"eventId":"${'😀'.repeat(128)}x"`),
      d('{}', ',"eventId":""'),
      d('{}', ',"eventId":null'),
      d('{}', ',"eventID":"legacy"'),
      d('{}', ',"eventID":7'),
      d('{}', ',"source":7'),
      d('{}', ',"source":"https://a.example.com/api/v1/eventHooks/x"'),
      d('{}', ',"eventType":"com.okta.event_hook "'),
      d('{}', ',"ev\\u0065ntType":"com.okta.event_hook"'),
      d('{}', ',"eventType":"com.okta.\\u0065vent_hook"'),
      d('{}', ',"data":{"events":[]}'), // a later data replaces the events
      d('{}', ',"data":{"events":{}}'),
      d('{}', ',"data":{"other":[]}'),
      d('{}', ',"data":[]'),
      d('{}', ',"d\\u0061ta":{"ev\\u0065nts":[1]}'),
      '{"eventType":"com.okta.event_hook","data":{"events":[1],"events":[2,{}]}}',
      '{"eventType":"com.okta.event_hook","data":{"__proto__":{"events":[]}}}',
      '{"__proto__":{"eventType":"com.okta.event_hook","data":{"events":[]}}}',
      `\ufeff{"eventType":"com.okta.event_hook","data":{"events":[{"uuid":"${uuid}",${p},"eventType":"e"}]}}`,
      '\ufeff\ufeff{}',
      ' \t\r\n{ "eventType" : "com.okta.event_hook" , "data" : { "events" : [ ] } } \n',
      '[{"eventType":"com.okta.event_hook","data":{"events":[]}}]',
      'null',
      '',
      '{"eventType":"com.okta.event_hook","data":{"events":[]}} x',
      '{"eventType":"com.okta.event_hook","data":{"events":[01]}}',
      `{"eventType":"com.okta.event_hook","data":{"events":[${'['.repeat(124)}${']'.repeat(124)}]}}`,
      `{"eventType":"com.okta.event_hook","data":{"events":[${'['.repeat(125)}${']'.repeat(125)}]}}`,
      `{"eventType":"com.okta.event_hook","data":{"events":[${'['.repeat(125)}${']'.repeat(124)}]}}`,
      `{"eventType":"com.okta.event_hook","x":${'['.repeat(100_000)}${']'.repeat(100_000)},"data":{"events":[]}}`,
    ];
    for (const b of bodies) both(Buffer.isBuffer(b) ? b : Buffer.from(b));
    both(d(`{"uuid":"${uuid}",${p},"eventType":"e"}`), 'https://a.example.com/api/v1/eventHooks/x');
    both(
      d('{}', ',"source":"https://A.example.com/api/v1/eventHooks/x/"'),
      'https://a.example.com/api/v1/eventHooks/x',
    );
    both(d('{}', ',"source":"https://a.example.com/api/v1/eventHooks/y"'), 'https://a.example.com/api/v1/eventHooks/x');
  });

  it('on seeded random corruptions of real deliveries (byte flips, cuts, inserted JSON punctuation)', () => {
    const rand = seededRandom(2626);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const events = validLogEvents();
    const verdicts = new Map<string, number>();
    for (let k = 0; k < 3000; k++) {
      const n = 1 + Math.floor(rand() * 4);
      const sent = delivery(
        'acme',
        'h1',
        Array.from({ length: n }, () => pick(events)),
        `d-${k}`,
      );
      const out = corrupted(Buffer.from(JSON.stringify(sent, null, pick([0, 0, 1, '\t']))), rand);
      both(out);
      const parsed = parseDelivery(out, ctx);
      const verdict = parsed.ok
        ? parsed.rejected.length > 0
          ? 'some events dead-lettered'
          : 'accepted'
        : parsed.rejection;
      verdicts.set(verdict, (verdicts.get(verdict) ?? 0) + 1);
    }
    // Every branch was exercised: whole deliveries taken, events dead-lettered, bodies refused for each reason.
    for (const v of ['accepted', 'some events dead-lettered', 'not-json', 'not-delivery', 'invalid-utf8'])
      expect(verdicts.get(v) ?? 0, `${v}: ${JSON.stringify([...verdicts])}`).toBeGreaterThan(20);
  });
});
