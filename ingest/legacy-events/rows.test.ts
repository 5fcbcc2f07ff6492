import { describe, expect, it } from 'vitest';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { legacyEvents } from '../../test/fixtures/index.js';
import { legacyEventSchema } from './event.js';
import { legacyEventsPipeline, mapLegacyEventRecord } from './rows.js';

const rec = (value: unknown, raw?: string): ConsumedRecord => ({
  topic: 't',
  partition: 0,
  offset: 0,
  key: 'acme',
  timestamp: 0,
  value: Buffer.from(raw ?? JSON.stringify(value)),
  headers: { [Header.org]: 'acme', [Header.source]: 'legacy-events', [Header.receivedAt]: '2026-01-01T00:00:00.000Z' },
});

describe('legacy event rows', () => {
  it('maps every fixture event, keeping the raw JSON and the parallel actor/target arrays', () => {
    const corpus = legacyEvents();
    expect(corpus.length).toBeGreaterThan(0);
    for (const e of corpus) {
      expect(legacyEventSchema.safeParse(e).success).toBe(true);
      const m = mapLegacyEventRecord(rec(e));
      if (!m.ok) throw new Error(m.reason);
      expect(JSON.parse(m.row.raw)).toEqual(e);
      expect(m.row.org).toBe('acme');
      expect(m.row.source).toBe('legacy-events');
      expect(m.row.actor_id.length).toBe(m.row.actor_object_type.length);
      expect(m.row.target_id.length).toBe(m.row.target_login.length);
    }
    const sso = mapLegacyEventRecord(
      rec(corpus.find((e) => (e.action as { objectType: string }).objectType === 'app.admin.sso.login.success')),
    );
    expect(sso.ok && sso.row).toMatchObject({
      event_id: 'tevz9480hwm5APtQh303sGVfe1559552881000',
      published: '2019-06-03 09:08:01.000',
      action_object_type: 'app.admin.sso.login.success',
      client_ip: '198.51.100.23',
      target_object_type: ['User', 'AppInstance'],
      received_at: '2026-01-01 00:00:00.000',
    });
  });

  it('refuses records without an eventId or a published time, or that are not JSON objects', () => {
    expect(mapLegacyEventRecord(rec({ published: '2026-01-01T00:00:00Z' }))).toMatchObject({
      ok: false,
      reason: /eventId/,
    });
    expect(mapLegacyEventRecord(rec({ eventId: 'tev1', published: 'yesterday' }))).toMatchObject({
      ok: false,
      reason: /published/,
    });
    expect(mapLegacyEventRecord(rec(null, '[1]'))).toMatchObject({ ok: false });
    expect(mapLegacyEventRecord(rec(null, '{'))).toMatchObject({ ok: false });
  });

  it('is a sink pipeline writing legacy_events and dead-lettering what it refuses', () => {
    expect(legacyEventsPipeline('p.legacy-events')).toMatchObject({
      name: 'legacy-events',
      topic: 'p.legacy-events',
      table: 'legacy_events',
      onReject: 'deadletter',
    });
  });
});
