import { describe, expect, it } from 'vitest';
import { delivery, messyLogEvents, validLogEvents } from '../../test/fixtures/index.js';
import { describeIssues, eventHookDeliverySchema } from '../../schemas/logevent.js';
import { eventEdgeCases } from '../../test/support/event-edge-cases.js';
import { MAX_JSON_DEPTH, hookEventProblem, hookEventSchema, parseDelivery, sourceMatches } from './delivery.js';

const ctx = { org: 'acme', hookId: 'h1', receivedAt: new Date('2026-11-21T00:00:00Z') };
const body = (x: unknown) => Buffer.from(JSON.stringify(x));
const event = (over: Record<string, unknown> = {}) => ({
  uuid: crypto.randomUUID(),
  published: '2026-11-20T10:00:00.000Z',
  eventType: 'user.session.start',
  ...over,
});

function parsedOk(b: Buffer, c: Parameters<typeof parseDelivery>[1] = ctx) {
  const parsed = parseDelivery(b, c);
  if (!parsed.ok) throw new Error(`refused: ${parsed.reason}`);
  return parsed;
}

describe('parseDelivery', () => {
  it('turns every valid fixture event into a keyed record whose value is the event JSON, with metadata headers', () => {
    const events = validLogEvents();
    const parsed = parsedOk(body(delivery('acme', 'h1', events, 'delivery-1')));
    expect(parsed.rejected).toEqual([]);
    expect(parsed.events).toHaveLength(events.length);
    parsed.events.forEach((r, i) => {
      expect(r.key).toBe('acme');
      expect(JSON.parse(r.value.toString())).toEqual(events[i]);
      expect(r.headers).toEqual({
        'hooklog-org': 'acme',
        'hooklog-source': 'hook',
        'hooklog-hook-id': 'h1',
        'hooklog-delivery-id': 'delivery-1',
        'hooklog-received-at': '2026-11-21T00:00:00.000Z',
      });
    });
  });

  it('accepts exactly the fixture events the service could send, and dead-letters the rest with raw JSON and a reason naming the field', () => {
    const all = [...validLogEvents().slice(0, 60), ...messyLogEvents(), ...validLogEvents().slice(60)];
    const parsed = parsedOk(body(delivery('acme', 'h1', all)));
    // logevents.valid.jsonl holds the real uuid + ISO published + eventType events; the messy ones lack one of them.
    const valid = new Set(validLogEvents().map((e) => JSON.stringify(e)));
    expect(parsed.events.map((r) => r.value.toString()).sort()).toEqual([...valid].sort());
    expect(parsed.rejected).toHaveLength(all.length - valid.size);
    for (const r of parsed.rejected) {
      expect(r.headers['hooklog-reason']).toMatch(/^data\.events\.\d+: (uuid|published|eventType)/);
      expect(r.headers['hooklog-origin']).toBe('event-hook');
      const index = Number(/^data\.events\.(\d+)/.exec(r.headers['hooklog-reason']!)![1]);
      expect(JSON.parse(r.value.toString())).toEqual(all[index]);
    }
  });

  it('refuses placeholder and near-miss uuids (they would merge distinct events in ClickHouse) but takes any UUID version and case', () => {
    for (const uuid of [
      '123',
      'unknown',
      'redacted',
      'b8c9d0e1-f2a3-4567-b234-890123456b2',
      '1234-abc-1234',
      '',
      ' f790999f-fe87-467a-9880-6982a583986c',
      12345,
    ]) {
      expect(hookEventProblem(event({ uuid })), String(uuid)).toMatch(/^uuid: /);
    }
    for (const uuid of [
      'f1d0b993-cc19-11ed-a688-db22c99ef6c4',
      'F790999F-FE87-467A-9880-6982A583986C',
      crypto.randomUUID(),
    ]) {
      expect(hookEventProblem(event({ uuid })), uuid).toBeUndefined();
    }
  });

  it('refuses published values that are not ISO-8601 with a zone, not a real date, or outside 1900..2299', () => {
    const notReal = [
      '2026-02-30T10:00:00Z',
      '2026-04-31T10:00:00Z',
      '2025-02-29T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-00-10T10:00:00Z',
    ];
    for (const published of [
      '2026-11-20 10:00:00',
      '2026-13-45T10:00:00Z',
      '2026-11-20T10:00:00',
      'redacted',
      1764000000000,
      null,
      '1850-01-01T00:00:00Z',
      '2300-01-01T00:00:00Z',
      ...notReal,
    ]) {
      const parsed = parsedOk(body(delivery('acme', 'h1', [event({ published })])));
      expect(parsed.events, String(published)).toHaveLength(0);
      expect(parsed.rejected[0]!.headers['hooklog-reason']).toMatch(/published/);
    }
    for (const published of [
      '2024-02-29T23:59:59.999Z',
      '2026-11-20T10:00:00+05:30',
      '1900-01-01T00:00:00Z',
      '2299-12-31T23:59:59Z',
    ]) {
      expect(hookEventProblem(event({ published })), published).toBeUndefined();
    }
  });

  it('dead-letters events that are not objects, each with its own JSON', () => {
    const items = [1, 'text', null, [event()], true];
    const parsed = parsedOk(body(delivery('acme', 'h1', items)));
    expect(parsed.events).toHaveLength(0);
    expect(parsed.rejected.map((r) => JSON.parse(r.value.toString()))).toEqual(items);
  });

  it('keeps __proto__ and constructor keys as plain data and pollutes nothing', () => {
    const text =
      `{"eventType":"com.okta.event_hook","eventId":"d1","__proto__":{"polluted":1},"data":{"events":[` +
      `{"uuid":"${crypto.randomUUID()}","published":"2026-11-20T10:00:00Z","eventType":"x","__proto__":{"isAdmin":true},"constructor":{"prototype":{"polluted":2}}}]}}`;
    const parsed = parsedOk(Buffer.from(text));
    expect(parsed.events).toHaveLength(1);
    const stored = parsed.events[0]!.value.toString();
    expect(stored).toContain('"__proto__":{"isAdmin":true}');
    expect(stored).toContain('"constructor":{"prototype":{"polluted":2}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    // A `data` whose only key is "__proto__" does not reach Object.prototype.events: not a delivery.
    const sneaky = parseDelivery(
      Buffer.from('{"eventType":"com.okta.event_hook","data":{"__proto__":{"events":[]}}}'),
      ctx,
    );
    expect(sneaky).toMatchObject({ ok: false, rejection: 'not-delivery' });
  });

  it('refuses bodies that are not deliveries at all, naming why', () => {
    const cases: Array<[string | Buffer, string]> = [
      ['{not json', 'not-json'],
      ['{"eventType":"com.okta.event_hook","data":{"events":[', 'not-json'],
      ['', 'not-json'],
      ['null', 'not-delivery'],
      ['[1,2]', 'not-delivery'],
      ['"a string"', 'not-delivery'],
      [JSON.stringify({ eventType: 'com.okta.oauth2.tokens.transform', data: {} }), 'not-delivery'],
      [JSON.stringify({ eventType: 'com.okta.event_hook', data: { events: 'x' } }), 'not-delivery'],
      [JSON.stringify({ eventType: 'com.okta.event_hook', eventId: 42, data: { events: [] } }), 'not-delivery'],
      [Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), 'invalid-utf8'], // {"\xc3(":1}
      [Buffer.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]), 'invalid-utf8'], // a UTF-16 surrogate encoded as UTF-8
      ['['.repeat(100_000) + ']'.repeat(100_000), 'too-deep'],
    ];
    for (const [raw, rejection] of cases) {
      expect(parseDelivery(Buffer.isBuffer(raw) ? raw : Buffer.from(raw), ctx), String(raw).slice(0, 40)).toMatchObject(
        { ok: false, rejection },
      );
    }
  });

  it('refuses nesting past MAX_JSON_DEPTH inside an event, and takes it up to there; brackets in strings do not count', () => {
    const nest = (n: number) => JSON.parse('['.repeat(n) + ']'.repeat(n)) as unknown;
    const envelopeDepth = 4; // envelope { data { events [ event {
    expect(
      parsedOk(body(delivery('acme', 'h1', [event({ deep: nest(MAX_JSON_DEPTH - envelopeDepth) })]))).events,
    ).toHaveLength(1);
    expect(
      parseDelivery(body(delivery('acme', 'h1', [event({ deep: nest(MAX_JSON_DEPTH - envelopeDepth + 1) })])), ctx),
    ).toMatchObject({ ok: false, rejection: 'too-deep' });
    expect(
      parsedOk(body(delivery('acme', 'h1', [event({ text: '[[[[{{{{'.repeat(1000) + '\\"[' })]))).events,
    ).toHaveLength(1);
  });

  it('drops a leading byte-order mark, and keeps non-ASCII text intact', () => {
    const e = event({ displayMessage: 'Anmeldung für Zoë 🔐' });
    const parsed = parsedOk(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body(delivery('acme', 'h1', [e]))]));
    expect(JSON.parse(parsed.events[0]!.value.toString('utf8'))).toEqual(e);
  });

  it('takes the delivery id from eventId, or from the eventID spelling of older docs', () => {
    expect(parsedOk(body({ ...delivery('acme', 'h1', []), eventId: 'a-1' })).deliveryId).toBe('a-1');
    const { eventId: _drop, ...legacy } = delivery('acme', 'h1', []);
    expect(parsedOk(body({ ...legacy, eventID: 'b-2' })).deliveryId).toBe('b-2');
    expect(parsedOk(body(legacy)).deliveryId).toBeUndefined();
  });

  it('with a pinned source, takes only deliveries naming that org URL and service hook id', () => {
    const pinned = { ...ctx, expectedSource: 'https://acme.okta.com/api/v1/eventHooks/who7hphp39JoHLni81d7' };
    const withSource = (source: unknown) => body({ ...delivery('acme', 'h1', [event()]), source });
    expect(
      parsedOk(withSource('https://acme.okta.com/api/v1/eventHooks/who7hphp39JoHLni81d7'), pinned).events,
    ).toHaveLength(1);
    for (const s of [
      'https://evil.okta.com/api/v1/eventHooks/who7hphp39JoHLni81d7',
      'https://acme.okta.com/api/v1/eventHooks/other',
      undefined,
    ]) {
      expect(parseDelivery(withSource(s), pinned), String(s)).toMatchObject({
        ok: false,
        rejection: 'source-mismatch',
      });
    }
    expect(parseDelivery(withSource(42), pinned)).toMatchObject({ ok: false, rejection: 'not-delivery' });
    // Unpinned hooks take any source: sample deliveries in the docs name placeholder orgs.
    expect(parsedOk(withSource('https://{yourOktaDomain}/api/v1/eventHooks/x')).events).toHaveLength(1);
  });
});

describe('the checks without zod', () => {
  // Each fast path must never pass what zod refuses, and must say the same of what it refuses.
  const valid = event({ uuid: 'f1d0b993-cc19-11ed-a688-db22c99ef6c4' });
  it.each([
    ...eventEdgeCases(valid),
    ['an upper-case uuid', { ...valid, uuid: 'F790999F-FE87-467A-9880-6982A583986C' }],
    ['a uuid one digit short', { ...valid, uuid: 'f1d0b993-cc19-11ed-a688-db22c99ef6c' }],
    ['a uuid with a trailing newline', { ...valid, uuid: 'f1d0b993-cc19-11ed-a688-db22c99ef6c4\n' }],
    ['no uuid', { published: valid.published, eventType: 'e' }],
  ])('event, %s: the same verdict as zod', (_, item) => {
    const r = hookEventSchema.safeParse(item);
    expect(hookEventProblem(item)).toBe(r.success ? undefined : describeIssues(r.error));
  });

  const envelope = { eventType: 'com.okta.event_hook', eventId: 'd-1', source: 'https://a/b', data: { events: [] } };
  it.each([
    ['a delivery', envelope],
    ['no eventId or source', { eventType: envelope.eventType, data: envelope.data }],
    ['an empty eventId', { ...envelope, eventId: '' }],
    ['an eventId of 256', { ...envelope, eventId: 'x'.repeat(256) }],
    ['an eventId of 257', { ...envelope, eventId: 'x'.repeat(257) }],
    ['a null eventId', { ...envelope, eventId: null }],
    ['a null source', { ...envelope, source: null }],
    ['another eventType', { ...envelope, eventType: 'com.okta.event_hook ' }],
    ['data an array', { ...envelope, data: [[]] }],
    ['data null', { ...envelope, data: null }],
    ['events an object', { ...envelope, data: { events: {} } }],
    ['events inherited', { ...envelope, data: JSON.parse('{"__proto__":{"events":[]}}') }],
    ['an own __proto__ key', JSON.parse(`{"__proto__":${JSON.stringify(envelope)}}`)],
    ['an array', [envelope]],
  ])('envelope, %s: taken by parseDelivery exactly when zod takes it', (_, item) => {
    const r = eventHookDeliverySchema.safeParse(item);
    const parsed = parseDelivery(body(item), ctx);
    if (r.success) expect(parsed).toMatchObject({ ok: true, deliveryId: r.data.eventId });
    else
      expect(parsed).toEqual({
        ok: false,
        rejection: 'not-delivery',
        reason: `not an event hook delivery: ${describeIssues(r.error)}`,
      });
  });
});

describe('sourceMatches', () => {
  const pin = 'https://acme.okta.com/api/v1/eventHooks/who1';
  it('ignores the case of scheme and host and a trailing slash; the path is exact', () => {
    expect(sourceMatches('HTTPS://ACME.okta.com/api/v1/eventHooks/who1/', pin)).toBe(true);
    expect(sourceMatches('https://acme.okta.com/api/v1/eventhooks/who1', pin)).toBe(false);
    expect(sourceMatches('https://acme.okta.com.evil.io/api/v1/eventHooks/who1', pin)).toBe(false);
    expect(sourceMatches('https://acme.okta.com/api/v1/eventHooks/who1?x=1', pin)).toBe(false);
    expect(sourceMatches('not a url', pin)).toBe(false);
  });
});
