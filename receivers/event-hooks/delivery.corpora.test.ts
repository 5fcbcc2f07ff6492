/** Conformance: the third-party sample events and the published event hook deliveries (npm run test:corpora). */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPORA_DIR, delivery, readJsonl, validLogEvents } from '../../test/support/corpus.js';
import { parseDelivery } from './delivery.js';

const ctx = { org: 'acme', hookId: 'h1', receivedAt: new Date('2026-11-21T00:00:00Z') };
const body = (x: unknown) => Buffer.from(JSON.stringify(x));

function parsedOk(b: Buffer, c: Parameters<typeof parseDelivery>[1] = ctx) {
  const parsed = parseDelivery(b, c);
  if (!parsed.ok) throw new Error(`refused: ${parsed.reason}`);
  return parsed;
}

describe('parseDelivery over the corpora', () => {
  it('turns every valid corpus event into a keyed record whose value is the event JSON, with metadata headers', () => {
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

  it('accepts exactly the corpus events the service could send, and dead-letters the rest with raw JSON and a reason naming the field', () => {
    const all = readJsonl('logevents.jsonl');
    const parsed = parsedOk(body(delivery('acme', 'h1', all)));
    // logevents.valid.jsonl is the corpus's own list of real uuid + ISO published + eventType events.
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

  it('parses every event-hook delivery in the corpus as the service sent it', () => {
    const dir = join(CORPORA_DIR, 'hooks');
    const files = readdirSync(dir).filter((f) => f.startsWith('request__com.okta.event_hook__'));
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const f of files) {
      const raw = readFileSync(join(dir, f));
      const parsed = parsedOk(raw);
      const sent = JSON.parse(raw.toString()) as { eventId?: string; eventID?: string; data: { events: unknown[] } };
      expect(parsed.deliveryId, f).toBe(sent.eventId ?? sent.eventID);
      expect(
        parsed.events.map((r) => JSON.parse(r.value.toString())),
        f,
      ).toEqual(sent.data.events);
    }
  });
});
