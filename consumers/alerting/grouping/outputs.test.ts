/**
 * Grouped alerts at the outputs: the alerts table folds an alert's revisions
 * into one row holding the latest (real chdb, migrated), rows of records
 * without the new fields read as one finding, and the Slack message says the
 * alert is grouped, with no event value able to make a link or a mention.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedStore } from '../../../analytics/testing.js';
import type { Store } from '../../../platform/store/index.js';
import type { ConsumedRecord } from '../../../platform/stream/types.js';
import type { Alert } from '../alert.js';
import { mapAlertRecord, type AlertRow } from '../outputs/clickhouse.js';
import { webhookBody } from '../outputs/format.js';

const opening: Alert = {
  alert_id: 'a'.repeat(32),
  rule_id: 'fail',
  rule_title: 'Failures for <!channel> & <https://evil.example|click>',
  severity: 'high',
  kind: 'match',
  org: 'acme',
  key: '["<@U123>"]',
  event_time: '2026-03-01T10:00:00.000Z',
  first_event_time: '2026-03-01T10:00:00.000Z',
  count: 1,
  event_ids: ['e1'],
  revision: 0,
  findings: 1,
  last_event_time: '2026-03-01T10:00:00.000Z',
  group_until: '2026-03-01T11:00:00.000Z',
};
const revision = (n: number, count: number): Alert => ({
  ...opening,
  revision: n,
  count,
  findings: count,
  last_event_time: `2026-03-01T10:${String(n).padStart(2, '0')}:00.000Z`,
});
const rec = (a: unknown, offset = 0) => ({ value: Buffer.from(JSON.stringify(a)), offset }) as ConsumedRecord;
const row = (a: unknown) => {
  const m = mapAlertRecord(rec(a));
  if (!m.ok) throw new Error(m.reason);
  return m.row;
};

describe('the alerts table', () => {
  let store: Store;
  beforeAll(async () => {
    store = await migratedStore('alert_groups');
  }, 120_000);
  afterAll(() => store?.close());

  const read = () =>
    store.query<{ n: string; event_count: number; finding_count: number; revision: number; last: string }>(
      `SELECT count() OVER () AS n, event_count, finding_count, revision, toString(last_event_time) AS last
       FROM ${store.database}.alerts FINAL WHERE alert_id = {id:String}`,
      { id: opening.alert_id },
    );

  it('folds the revisions of an alert into one row: the latest, within one insert and across inserts', async () => {
    await store.insertJson('alerts', [row(opening), row(revision(1, 40)), row(revision(2, 90))], { dedupToken: 't1' });
    expect(await read()).toEqual([
      { n: '1', event_count: 90, finding_count: 90, revision: 2, last: '2026-03-01 10:02:00.000' },
    ]);
    await store.insertJson('alerts', [row(revision(3, 5000))], { dedupToken: 't2' });
    expect((await read()).map((r) => [r.n, r.event_count, r.revision])).toEqual([['1', 5000, 3]]);
    // A redelivered range written again (a new token: the batch was cut elsewhere) ends on the latest again.
    await store.insertJson('alerts', [row(revision(2, 90)), row(revision(3, 5000))], { dedupToken: 't3' });
    expect((await read()).map((r) => [r.n, r.event_count, r.revision])).toEqual([['1', 5000, 3]]);
  }, 60_000);

  it('reads a record without the grouping fields (an earlier release, an ungrouped rule) as one finding', async () => {
    const { revision: _r, findings: _f, last_event_time: _l, group_until: _g, ...plain } = opening;
    const r: AlertRow = row({ ...plain, alert_id: 'b'.repeat(32), count: 3 });
    expect(r).toMatchObject({ revision: 0, finding_count: 1, last_event_time: '2026-03-01 10:00:00.000' });
    expect(r.group_until).toBeNull();
    expect(r.dedup).toBe('');
    await store.insertJson('alerts', [r], { dedupToken: 't4' });
    // The columns' defaults, for rows inserted without them (the previous release's output).
    await store.insertJson('alerts', [
      { ...r, alert_id: 'c'.repeat(32), revision: undefined, finding_count: undefined },
    ]);
    const rows = await store.query<{ alert_id: string; revision: number; finding_count: number }>(
      `SELECT alert_id, revision, finding_count FROM ${store.database}.alerts FINAL
       WHERE alert_id IN ({b:String}, {c:String}) ORDER BY alert_id`,
      { b: 'b'.repeat(32), c: 'c'.repeat(32) },
    );
    expect(rows).toEqual([
      { alert_id: 'b'.repeat(32), revision: 0, finding_count: 1 },
      { alert_id: 'c'.repeat(32), revision: 0, finding_count: 1 },
    ]);
  }, 60_000);
});

describe('the Slack message', () => {
  it('says the alert is grouped and until when; event values make no link or mention', () => {
    const { text } = JSON.parse(webhookBody(opening, 'slack')) as { text: string };
    expect(text).toContain('grouped: further findings until 2026-03-01T11:00:00.000Z count into this alert');
    expect(text).toContain('Failures for &lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;');
    expect(text).toContain('key ["&lt;@U123&gt;"]');
    expect(text).not.toMatch(/<[!@h]/);
  });
});
