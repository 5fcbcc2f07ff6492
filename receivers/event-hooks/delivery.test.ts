import { describe, expect, it } from 'vitest';
import { delivery, readJsonl, validLogEvents } from '../../test/support/corpus.js';
import { parseDelivery } from './delivery.js';
import { SecretMatcher } from './auth.js';

const ctx = { org: 'acme', hookId: 'h1', receivedAt: new Date('2026-11-21T00:00:00Z') };
const body = (x: unknown) => Buffer.from(JSON.stringify(x));

describe('parseDelivery', () => {
  it('turns every valid corpus event into a keyed record whose value is the event JSON, with metadata headers', () => {
    const events = validLogEvents();
    const parsed = parseDelivery(body(delivery('acme', 'h1', events, 'delivery-1')), ctx);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.rejected).toEqual([]);
    expect(parsed.events).toHaveLength(events.length);
    parsed.events.forEach((r, i) => {
      expect(r.key).toBe('acme');
      expect(JSON.parse(r.value.toString())).toEqual(events[i]);
      expect(r.headers).toMatchObject({ 'hooklog-org': 'acme', 'hooklog-source': 'hook', 'hooklog-hook-id': 'h1', 'hooklog-delivery-id': 'delivery-1', 'hooklog-received-at': '2026-11-21T00:00:00.000Z' });
    });
  });

  it('dead-letters each invalid event with its raw JSON and a reason naming the field, keeping the valid ones', () => {
    const all = readJsonl('logevents.jsonl');
    const parsed = parseDelivery(body(delivery('acme', 'h1', all)), ctx);
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.events.length + parsed.rejected.length).toBe(all.length);
    expect(parsed.events.length).toBeGreaterThanOrEqual(127);
    expect(parsed.rejected.length).toBeGreaterThan(0);
    for (const r of parsed.rejected) {
      expect(r.headers['hooklog-reason']).toMatch(/^data\.events\.\d+: (uuid|published|eventType)/);
      expect(r.headers['hooklog-origin']).toBe('event-hook');
      const index = Number(/^data\.events\.(\d+)/.exec(r.headers['hooklog-reason']!)![1]);
      expect(JSON.parse(r.value.toString())).toEqual(all[index]);
    }
  });

  it('refuses bodies that are not deliveries at all', () => {
    expect(parseDelivery(Buffer.from('{not json'), ctx)).toMatchObject({ ok: false, reason: expect.stringMatching(/not JSON/) });
    expect(parseDelivery(body({ eventType: 'com.okta.oauth2.tokens.transform', data: {} }), ctx)).toMatchObject({ ok: false, reason: expect.stringMatching(/eventType/) });
    expect(parseDelivery(body({ eventType: 'com.okta.event_hook', data: { events: 'x' } }), ctx)).toMatchObject({ ok: false, reason: expect.stringMatching(/data\.events/) });
    expect(parseDelivery(body([1, 2]), ctx).ok).toBe(false);
  });

  it('rejects published values that are not ISO-8601 with a zone', () => {
    const e = { uuid: 'u1', eventType: 't', published: '2026-11-20 10:00:00' };
    const parsed = parseDelivery(body(delivery('acme', 'h1', [e])), ctx);
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.events).toHaveLength(0);
    expect(parsed.rejected[0]!.headers['hooklog-reason']).toMatch(/published/);
  });
});

describe('SecretMatcher', () => {
  it('accepts each configured secret (rotation) and nothing else', () => {
    const m = new SecretMatcher(['first-secret-0123456', 'second-secret-012345']);
    expect(m.matches('first-secret-0123456')).toBe(true);
    expect(m.matches('second-secret-012345')).toBe(true);
    expect(m.matches('first-secret-012345')).toBe(false);
    expect(m.matches('first-secret-01234567')).toBe(false);
    expect(m.matches('')).toBe(false);
    expect(m.matches(undefined)).toBe(false);
  });
});
