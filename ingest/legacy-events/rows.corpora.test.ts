/** Conformance: legacy event rows over the third-party sample events (npm run test:corpora). */
import { describe, expect, it } from 'vitest';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { readJsonl } from '../../test/support/corpus.js';
import { legacyEventSchema } from './event.js';
import { mapLegacyEventRecord } from './rows.js';

const rec = (value: unknown, raw?: string): ConsumedRecord => ({
  topic: 't',
  partition: 0,
  offset: 0,
  key: 'acme',
  timestamp: 0,
  value: Buffer.from(raw ?? JSON.stringify(value)),
  headers: { [Header.org]: 'acme', [Header.source]: 'legacy-events', [Header.receivedAt]: '2026-01-01T00:00:00.000Z' },
});

describe('legacy event rows over the corpora', () => {
  it('maps every corpus event, keeping the raw JSON and the parallel actor/target arrays', () => {
    const corpus = readJsonl('legacy_events.jsonl');
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
      event_id: 'tev2FSkoWAARbKaFBBfPPXUWA1533221531000',
      published: '2018-08-02 14:52:11.000',
      action_object_type: 'app.admin.sso.login.success',
      client_ip: '99.225.99.159',
      target_object_type: ['User', 'AppInstance'],
      received_at: '2026-01-01 00:00:00.000',
    });
  });
});
