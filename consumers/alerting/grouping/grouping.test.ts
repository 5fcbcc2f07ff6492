/**
 * Grouped alerts in the engine: one alert per group and period however many
 * findings, its revisions carrying the count, times and a bounded sample; what
 * opens a new alert (the period, the watermark, a higher severity, another
 * dedup text); and the properties a restart relies on: the same records give
 * the same final alerts whatever the batching, and a checkpoint restored
 * mid-flood continues as if nothing had happened.
 */
import { describe, expect, it } from 'vitest';
import { latestRevisions, type Alert } from '../alert.js';
import { PartitionEngine, type EngineState } from '../engine.js';
import { compileRule } from '../rules/compile.js';
import type { CompiledRule } from '../rules/types.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const SEC = 1000;
const MIN = 60_000;
let n = 0;
function failure(atMs: number, over: Record<string, unknown> = {}) {
  return {
    uuid: `g${++n}`,
    published: new Date(T0 + atMs).toISOString(),
    eventType: 'user.session.start',
    outcome: { result: 'FAILURE' },
    actor: { alternateId: 'alice@example.com', type: 'User' },
    client: { ipAddress: '198.51.100.7' },
    ...over,
  };
}
type Ev = ReturnType<typeof failure>;

const failed = 'eventType eq "user.session.start" and outcome.result eq "FAILURE"';
const rule = (over: Record<string, unknown> = {}): CompiledRule =>
  compileRule({ id: 'fail', detection: failed, group_by: ['actor.alternateId'], dedup_period: '1h', ...over });

/** Feeds `events` in batches of `batch`, flushing after each as the consumer does; returns every record. */
function run(rules: CompiledRule[], events: Ev[], batch = events.length, state?: EngineState) {
  const engine = new PartitionEngine(rules, { allowedLatenessMs: 5 * MIN }, state);
  const records: Alert[] = [];
  for (let i = 0; i < events.length; i += batch) {
    for (const e of events.slice(i, i + batch))
      records.push(...engine.process(e, { org: 'acme', timeMs: Date.parse(e.published), id: e.uuid }));
    records.push(...engine.flush());
  }
  return { records, engine };
}

const flood = (count: number, everyMs = 500, over: Record<string, unknown> = {}) =>
  Array.from({ length: count }, (_, i) => failure(i * everyMs, over));

describe('a grouped rule', () => {
  it('makes one alert of 5,000 findings in its period: count, findings, first and last event, a bounded sample', () => {
    const events = flood(5000, 500); // 2,500 s: within the hour
    const { records } = run([rule()], events, 1000);
    // The opening record at once, then one update per batch: not one record per finding.
    expect(records).toHaveLength(1 + 5);
    expect(records.map((r) => r.revision)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(records.map((r) => r.alert_id)).size).toBe(1);
    expect(records[0]).toMatchObject({ count: 1, findings: 1, event_ids: [events[0]!.uuid] });
    const [a] = latestRevisions(records);
    expect(a).toMatchObject({
      alert_id: records[0]!.alert_id,
      count: 5000,
      findings: 5000,
      revision: 5,
      key: '["alice@example.com"]',
      // The opening finding's event time stays: the alerts table folds the revisions by it.
      event_time: events[0]!.published,
      first_event_time: events[0]!.published,
      last_event_time: events[4999]!.published,
      group_until: new Date(T0 + 3_600_000).toISOString(),
    });
    expect(a!.event_ids).toEqual([...events.slice(0, 10), ...events.slice(4990)].map((e) => e.uuid));
    // Without dedup: one alert per finding, as before.
    expect(run([rule({ dedup_period: undefined })], events).records).toHaveLength(5000);
  });

  it('the same final alerts whatever the batching, and across a checkpoint restored mid-flood', () => {
    const events = [...flood(300, 20 * SEC), ...flood(50, SEC, { actor: { alternateId: 'bob@example.com' } })];
    const final = (records: Alert[]) => latestRevisions(records).map(({ revision: _r, ...a }) => a);
    const whole = final(run([rule()], events).records);
    expect(whole.map((a) => [a.key, a.findings])).toEqual([
      ['["alice@example.com"]', 180], // 300 failures 20 s apart: 6,000 s, so two periods of an hour
      ['["alice@example.com"]', 120],
      ['["bob@example.com"]', 50], // late (behind the watermark): grouped all the same
    ]);
    for (const batch of [1, 7, 64]) expect(final(run([rule()], events, batch).records)).toEqual(whole);
    // A checkpoint (the state as JSON) taken after 123 events, restored into a new engine: nothing lost or twice.
    const first = run([rule()], events.slice(0, 123), 10);
    const saved = JSON.parse(JSON.stringify(first.engine.state)) as EngineState;
    const rest = run([rule()], events.slice(123), 10, saved);
    expect(final([...first.records, ...rest.records])).toEqual(whole);
    expect([...first.records, ...rest.records].filter((r) => r.revision === 0)).toHaveLength(3);
  });

  it('opens a new alert when the period ends; late events group apart from the present', () => {
    const events = [failure(0), failure(59 * MIN), failure(61 * MIN), failure(70 * MIN)];
    const alerts = latestRevisions(run([rule()], events).records);
    expect(alerts.map((a) => a.findings)).toEqual([2, 2]);
    expect(alerts[1]!.first_event_time).toBe(events[2]!.published);
    // A backlog of late events (two hours old) arriving while the user fails now: the present keeps its alert,
    // the backlog gets one of its own, neither split by the other.
    const now = (i: number) => failure(2 * 3_600_000 + i * SEC);
    const old = (i: number) => failure(i * SEC);
    const mixed = [now(0), old(0), now(1), old(1), old(2), now(2), old(3)];
    expect(latestRevisions(run([rule()], mixed).records).map((a) => [a.first_event_time, a.findings])).toEqual([
      [mixed[0]!.published, 3],
      [mixed[1]!.published, 4],
    ]);
  });

  it('groups by a dedup expression across keys, and never hides a higher severity in a lower alert', () => {
    const ip = (a: string, ipAddress: string, t: number) =>
      failure(t, { actor: { alternateId: a, type: 'User' }, client: { ipAddress } });
    const byIp = rule({ dedup: 'client.ipAddress' });
    const events = [ip('a@x', '203.0.113.1', 0), ip('b@x', '203.0.113.1', SEC), ip('c@x', '203.0.113.2', 2 * SEC)];
    const alerts = latestRevisions(run([byIp], events).records);
    expect(alerts.map((a) => [a.dedup, a.key, a.findings])).toEqual([
      ['203.0.113.1', '["a@x"]', 2], // the key of the finding that opened it
      ['203.0.113.2', '["c@x"]', 1],
    ]);
    const sev = rule({ severity: "if(actor.type == 'SuperAdmin', 'critical', 'low')" });
    const admin = { actor: { alternateId: 'alice@example.com', type: 'SuperAdmin' } };
    const mixed = [failure(0), failure(SEC), failure(2 * SEC, admin), failure(3 * SEC, admin), failure(4 * SEC)];
    const records = run([sev], mixed).records;
    expect(records.filter((r) => r.revision === 0).map((r) => r.severity)).toEqual(['low', 'critical']);
    expect(latestRevisions(records).map((a) => [a.severity, a.findings])).toEqual([
      ['low', 3],
      ['critical', 2],
    ]);
  });

  it('counts an event the service sent twice once', () => {
    const e = failure(0);
    const { records } = run([rule()], [e, failure(SEC), { ...e }]);
    expect(latestRevisions(records).map((a) => a.findings)).toEqual([2]);
  });

  it('keeps at most max_keys open alerts per rule, sending the update of one it closes first', () => {
    const users = ['a', 'b', 'c'].map((u) => ({ actor: { alternateId: `${u}@x`, type: 'User' } }));
    const events = [failure(0, users[0]), failure(SEC, users[0]), failure(2 * SEC, users[1])];
    events.push(failure(3 * SEC, users[2]), failure(4 * SEC, users[0]));
    const { records, engine } = run([rule({ max_keys: 2 })], events);
    expect(records.map((r) => [r.key, r.revision, r.findings])).toEqual([
      ['["a@x"]', 0, 1],
      ['["b@x"]', 0, 1],
      ['["a@x"]', 1, 2], // a's update, due when c's alert pushed a's out
      ['["c@x"]', 0, 1],
      ['["a@x"]', 0, 1], // a again: a new alert
    ]);
    expect(engine.state.groupsEvicted).toBe(2);
  });

  it('forgets a group once its period is behind the watermark, and keeps the state bounded', () => {
    const events = Array.from({ length: 3000 }, (_, i) =>
      failure(i * 10 * SEC, { actor: { alternateId: `u${i % 100}@x`, type: 'User' } }),
    );
    const { engine } = run([rule({ dedup_period: '10m' })], events, 500);
    engine.prune();
    const open = Object.values(engine.state.groups?.['fail'] ?? {});
    // 100 users, one event each per 1,000 s (each opens an alert): kept are those of the last period and
    // lateness, 15 min of events 10 s apart.
    expect(open.length).toBeGreaterThan(0);
    expect(open.length).toBeLessThanOrEqual(90);
    expect(open.every((g) => g.t + 10 * MIN > engine.watermark)).toBe(true);
  });
});

describe('titles and severities from the event', () => {
  it('fills a title template, bounded, with invisible characters shown', () => {
    const r = rule({
      dedup_period: undefined,
      title: 'Failures for {{ actor.alternateId }} from {{ coalesce(client.geographicalContext.country, "?") }}',
    });
    const [a] = run([r], [failure(0)]).records;
    expect(a!.rule_title).toBe('Failures for alice@example.com from ?');
    const hostile = failure(SEC, { actor: { alternateId: `rtl\u202Emoc.x@${'a'.repeat(100_000)}`, type: 'User' } });
    const [b] = run([r], [hostile]).records;
    expect(b!.rule_title.startsWith('Failures for rtl⟨U+202E⟩moc.x@aaa')).toBe(true);
    expect(b!.rule_title).toContain('…');
    expect(b!.rule_title.length).toBeLessThanOrEqual(200);
    expect(b!.rule_title).not.toContain('\u202E');
  });

  it('computes a severity per event; a value that is no severity is medium; constants as before', () => {
    const r = rule({
      dedup_period: undefined,
      severity: "if(client.ipAddress == '203.0.113.66', 'CRITICAL', client.zone)",
    });
    const got = run(
      [r],
      [
        failure(0, { client: { ipAddress: '203.0.113.66' } }),
        failure(SEC, { client: { ipAddress: '198.51.100.1', zone: 'low' } }),
        failure(2 * SEC, { client: { ipAddress: '198.51.100.1', zone: 'nonsense' } }),
        failure(3 * SEC, { client: { ipAddress: '198.51.100.1' } }),
      ],
    ).records;
    expect(got.map((a) => a.severity)).toEqual(['critical', 'low', 'medium', 'medium']);
    expect(compileRule({ id: 'c', detection: failed, severity: 'high', title: 'T' })).toMatchObject({
      severity: 'high',
      title: 'T',
    });
    expect(compileRule({ id: 'c', detection: failed, severity: 'high' }).labels).toBeUndefined();
  });

  it('a stateful rule names the previous event in its title', () => {
    const travel = compileRule({
      id: 'travel',
      type: 'stateful',
      detection: 'eventType eq "user.session.start"',
      group_by: ['actor.alternateId'],
      fields: { country: 'client.geographicalContext.country' },
      when: 'prev.country != null and country != prev.country',
      title: 'From {{ prev.country }} to {{ country }} ({{ client.ipAddress }})',
    });
    const at = (t: number, country: string, ip: string) =>
      failure(t, { client: { ipAddress: ip, geographicalContext: { country } } });
    const engine = new PartitionEngine([travel], { allowedLatenessMs: MIN });
    const out: Alert[] = [];
    for (const e of [at(0, 'FR', '192.0.2.1'), at(MIN, 'US', '192.0.2.2')])
      out.push(...engine.process(e, { org: 'acme', timeMs: Date.parse(e.published), id: e.uuid }));
    out.push(...engine.advanceTo(T0 + 10 * MIN));
    expect(out.map((a) => a.rule_title)).toEqual(['From FR to US (192.0.2.2)']);
  });
});

describe('what a rule may not say', () => {
  const bad = (over: Record<string, unknown>) => () =>
    compileRule({ id: 'x', detection: failed, ...over }, { source: 'rules.yaml' });
  it('refuses mistakes at load, naming the rule and the key', () => {
    expect(bad({ type: 'absence', window_ms: MIN, dedup: 'x' })).toThrow(/rules\.yaml: rule x: dedup and dedup_period/);
    expect(bad({ type: 'absence', window_ms: MIN, title: '{{ actor.id }}' })).toThrow(/absence finding has no event/);
    expect(bad({ dedup_period: '1h', suppress_ms: 1000 })).toThrow(/suppress_ms and dedup/);
    expect(bad({ dedup_period: '8d' })).toThrow(/dedup_period: expected a duration from 1s to 7d/);
    expect(bad({ title: 'Hi {{ actor.id' })).toThrow(/rule x\.title: "\{\{" at 3 has no "\}\}"/);
    expect(bad({ severity: 'frobnicate(actor.id)' })).toThrow(/rule x\.severity: unknown function frobnicate\(\)/);
    expect(bad({ dedup: 'actor.id +' })).toThrow(/rule x\.dedup: unexpected end/);
    expect(
      bad({
        type: 'scheduled',
        sql: 'SELECT 1',
        every_ms: 60_000,
        lookback_ms: 60_000,
        key: ['k'],
        dedup: 'k',
      }),
    ).toThrow(/scheduled rule's findings are result rows/);
  });
});
