/**
 * One definition of a valid event id (schemas/logevent.ts, `EVENT_UUID`), the
 * same on every path an event enters by: the event-hook receiver and the
 * System Log poller (and so backfill and reconcile, which check with the same
 * schema) accept and refuse exactly the same ids. The poller once took any
 * string of 1..128 characters the receiver refused.
 */
import { describe, expect, it } from 'vitest';
import { hookEventProblem } from '../receivers/event-hooks/delivery.js';
import { systemLogSource } from '../ingest/system-log/source.js';
import { checkLogEvent, isEventUuid, logEventSchema } from '../schemas/logevent.js';

const event = (uuid: unknown) => ({ uuid, published: '2026-11-20T10:00:00.000Z', eventType: 'user.session.start' });
const poller = systemLogSource({ baseUrl: 'https://example.okta.com', topic: 'logs', startMs: () => 0 });

const REFUSED: unknown[] = [
  '123',
  'unknown',
  'redacted',
  'u-1',
  'b8c9d0e1-f2a3-4567-b234-890123456b2',
  '{f790999f-fe87-467a-9880-6982a583986c}',
  ' f790999f-fe87-467a-9880-6982a583986c',
  'f790999ffe87467a98806982a583986c',
  '',
  'x'.repeat(128),
  12345,
];
const ACCEPTED = [
  'f1d0b993-cc19-11ed-a688-db22c99ef6c4',
  'F790999F-FE87-467A-9880-6982A583986C',
  '00000000-0000-0000-0000-000000000000',
  crypto.randomUUID(),
];

describe('a valid event id', () => {
  it.each(REFUSED.map((u) => [JSON.stringify(u), u]))(
    '%s is refused by the schema, the hooks and the poller',
    (_, u) => {
      expect(logEventSchema.safeParse(event(u)).success).toBe(false);
      expect(typeof u === 'string' && isEventUuid(u)).toBe(false);
      expect(hookEventProblem(event(u))).toMatch(/^uuid: /);
      expect(checkLogEvent(event(u))).toMatchObject({ ok: false, reason: expect.stringMatching(/^uuid: /) });
      expect(poller.check(event(u))).toMatchObject({ ok: false, reason: expect.stringMatching(/^uuid: /) });
    },
  );

  it.each(ACCEPTED.map((u) => [u]))('%s is accepted by the schema, the hooks and the poller', (u) => {
    expect(logEventSchema.safeParse(event(u)).success).toBe(true);
    expect(isEventUuid(u)).toBe(true);
    expect(hookEventProblem(event(u))).toBeUndefined();
    expect(checkLogEvent(event(u))).toMatchObject({ ok: true });
    expect(poller.check(event(u))).toMatchObject({ ok: true });
  });
});
