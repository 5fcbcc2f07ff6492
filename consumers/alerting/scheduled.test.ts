/**
 * Scheduled query rules over a real ClickHouse engine (chdb): one alert per
 * new result row, none for a row already alerted, the state bounded; every
 * scheduled rule of the shipped content fires on data built for it and not on
 * a near miss; and the scheduler on a stream resumes from its checkpoint.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertChunk } from '../../bench/analytics/load.js';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { compileRule } from './rules/compile.js';
import { loadRulePaths } from './rules/sources.js';
import type { CompiledRule } from './rules/types.js';
import { runScheduledOnce, startScheduler, type ScheduledState } from './scheduled.js';
import { createAlertingTelemetry } from './telemetry.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const H = 3_600_000;
const DAY = 24 * H;
/** The run under test: until = NOW, so the look-back ends here. */
const NOW = Date.parse('2026-06-10T12:00:00Z');
const CONTENT = fileURLToPath(new URL('./content', import.meta.url));

let n = 0;
function e(org: string, at: number, over: Record<string, unknown>): { org: string; event: Record<string, unknown> } {
  return {
    org,
    event: {
      uuid: `s-${n++}`,
      published: new Date(at).toISOString(),
      actor: { id: 'u-alice', alternateId: 'alice@x' },
      outcome: { result: 'SUCCESS' },
      ...over,
    },
  };
}
const push = (org: string, at: number, session: string, ip: string, behaviors: string) =>
  e(org, at, {
    eventType: 'system.push.send_factor_verify_push',
    client: { ipAddress: ip },
    authenticationContext: { externalSessionId: session },
    debugContext: { debugData: { behaviors } },
  });
const answer = (org: string, at: number, session: string, ip: string, result: string) =>
  e(org, at, {
    eventType: 'user.authentication.auth_via_mfa',
    outcome: { result },
    client: { ipAddress: ip },
    authenticationContext: { externalSessionId: session },
    debugContext: { debugData: { factor: 'OKTA_VERIFY_PUSH' } },
  });
const app = (name: string) => ({ id: name, type: 'AppInstance', displayName: name });
const challenge = (org: string, at: number, session: string, a: string) =>
  e(org, at, {
    eventType: 'policy.evaluate_sign_on',
    outcome: { result: 'CHALLENGE' },
    client: { ipAddress: '192.0.2.9' },
    authenticationContext: { externalSessionId: session },
    target: [app(a)],
  });
const sso = (org: string, at: number, session: string, a: string) =>
  e(org, at, {
    eventType: 'user.authentication.sso',
    client: { ipAddress: '192.0.2.9' },
    authenticationContext: { externalSessionId: session },
    target: [app(a)],
  });
const sms = (org: string, at: number, user: string, phone: string) =>
  e(org, at, {
    eventType: 'system.sms.send_phone_verification_message',
    actor: { id: user, alternateId: `${user}@x` },
    target: [
      { id: user, type: 'User' },
      { id: phone, type: 'MobilePhone' },
    ],
  });
const evalSignOn = (org: string, at: number, dt: string, ip: string, os: string, browser: string) =>
  e(org, at, {
    eventType: 'policy.evaluate_sign_on',
    outcome: { result: 'ALLOW' },
    client: { ipAddress: ip, userAgent: { os, browser } },
    debugContext: { debugData: { dtHash: dt } },
  });
const signIn = (org: string, at: number, user: string, country: string, os = 'Mac OS X') =>
  e(org, at, {
    eventType: 'user.session.start',
    actor: { id: user, alternateId: user },
    client: { ipAddress: '192.0.2.1', geographicalContext: { country }, userAgent: { os } },
  });

/** Per rule: the org whose data must fire it, and the org whose near-miss data must not. */
function data(): Array<{ org: string; event: Record<string, unknown> }> {
  const t = NOW - 30 * 60_000;
  const out = [
    // Push mismatch: 3 pushes (new device, new IP) from one IP, 1 answer from another → fire; near miss: answered
    // from one IP.
    push('push-fire', t, 'sess1', '203.0.113.1', 'New Device=POSITIVE, New IP=POSITIVE'),
    push('push-fire', t + 10_000, 'sess1', '203.0.113.1', 'New Device=POSITIVE, New IP=POSITIVE'),
    push('push-fire', t + 20_000, 'sess1', '203.0.113.1', 'New Device=POSITIVE, New IP=POSITIVE'),
    answer('push-fire', t + 25_000, 'sess1', '198.51.100.2', 'SUCCESS'),
    push('push-miss', t, 'sess1', '203.0.113.1', 'New Device=POSITIVE, New IP=POSITIVE'),
    push('push-miss', t + 10_000, 'sess1', '203.0.113.1', 'New Device=POSITIVE, New IP=POSITIVE'),
    push('push-miss', t + 20_000, 'sess1', '203.0.113.1', 'New Device=POSITIVE, New IP=POSITIVE'),
    answer('push-miss', t + 25_000, 'sess1', '203.0.113.1', 'SUCCESS'),
    // Apps: 3 challenged apps, 1 SSO → fire; near miss: 2 SSOs of 3.
    ...['a', 'b', 'c'].map((a, i) => challenge('apps-fire', t + i * 1000, 'sess2', a)),
    sso('apps-fire', t + 5000, 'sess2', 'a'),
    ...['a', 'b', 'c'].map((a, i) => challenge('apps-miss', t + i * 1000, 'sess2', a)),
    sso('apps-miss', t + 5000, 'sess2', 'a'),
    sso('apps-miss', t + 6000, 'sess2', 'b'),
    // Phone: two users one phone → fire; near miss: one user twice.
    sms('phone-fire', NOW - 20 * DAY, 'u1', 'mbl1'),
    sms('phone-fire', NOW - 2 * DAY, 'u2', 'mbl1'),
    sms('phone-miss', NOW - 20 * DAY, 'u1', 'mbl1'),
    sms('phone-miss', NOW - 2 * DAY, 'u1', 'mbl1'),
    sms('phone-miss', NOW - 2 * DAY, 'u2', 'mbl2'),
    // Cookie: one dtHash from 2 IPs and 2 OSes → fire; near miss: 2 IPs, same OS and browser.
    evalSignOn('cookie-fire', t, 'dt1', '192.0.2.1', 'Windows', 'CHROME'),
    evalSignOn('cookie-fire', t + 1000, 'dt1', '203.0.113.7', 'Linux', 'CHROME'),
    evalSignOn('cookie-miss', t, 'dt1', '192.0.2.1', 'Windows', 'CHROME'),
    evalSignOn('cookie-miss', t + 1000, 'dt1', '203.0.113.7', 'Windows', 'CHROME'),
    // First country in 90 days: history FR, today NO → fire; near miss: today FR again (and a user with no history).
    signIn('country-fire', NOW - 40 * DAY, 'bob', 'FR'),
    signIn('country-fire', NOW - H, 'bob', 'NO'),
    signIn('country-miss', NOW - 40 * DAY, 'bob', 'FR'),
    signIn('country-miss', NOW - H, 'bob', 'FR'),
    signIn('country-miss', NOW - H, 'new', 'NO'),
  ];
  // Rare OS: 60 sign-ins on Mac and 1 on Linux in history; today Linux → fire; near miss: today Mac.
  for (const org of ['os-fire', 'os-miss']) {
    for (let i = 0; i < 60; i++) out.push(signIn(org, NOW - 2 * DAY - i * H, 'carol', 'FR', 'Mac OS X'));
    out.push(signIn(org, NOW - 3 * DAY, 'carol', 'FR', 'Linux'));
    out.push(signIn(org, NOW - H, 'carol', 'FR', org === 'os-fire' ? 'Linux' : 'Mac OS X'));
  }
  return out;
}

const EXPECT: Record<string, string> = {
  'okta-catalogue.mismatch_between_source_and_response_okta_verify_push': 'push',
  'okta-catalogue.multiple_failed_requests_to_access_okta_applications': 'apps',
  'okta-catalogue.phone_number_registered_to_multiple_users': 'phone',
  'okta-catalogue.suspicious_use_of_an_Okta_Session_Cookie': 'cookie',
  'baseline.first_country_in_90d': 'country',
  'baseline.rare_os_for_user': 'os',
};

let store: Store;
beforeAll(async () => {
  store = openStore({
    database: randomName('scheduled'),
    dataDir: mkdtempSync(join(tmpdir(), 'hooklog-scheduled-')),
    logger: silentLogger(),
  });
  await migrate(store, silentLogger());
  await insertChunk(store, data());
});
afterAll(async () => store?.close());

const empty = (): ScheduledState => ({ last: 0, seen: {} });

describe('the shipped scheduled rules', () => {
  const scheduled = loadRulePaths([CONTENT])
    .flatMap((f) => f.rules)
    .filter((r) => r.kind === 'scheduled');

  it('are all covered here', () => {
    expect(scheduled.map((r) => r.id).sort()).toEqual(Object.keys(EXPECT).sort());
  });

  for (const [id, stem] of Object.entries(EXPECT)) {
    it(`${id}: fires on ${stem}-fire, not on ${stem}-miss`, async () => {
      const rule = scheduled.find((r) => r.id === id)!;
      const { alerts } = await runScheduledOnce(store, rule, empty(), NOW);
      const orgs = alerts.map((a) => a.org).filter((o) => o.startsWith(`${stem}-`));
      expect(orgs).toEqual([`${stem}-fire`]);
      expect(alerts.filter((a) => !a.org.startsWith(`${stem}-`))).toEqual([]);
    });
  }
});

describe('one alert per new result row', () => {
  const rule = compileRule({
    id: 'countries',
    type: 'scheduled',
    every_ms: H,
    lookback_ms: 7 * DAY,
    key: ['actor', 'country'],
    sql: `SELECT org, actor_alternate_id AS actor, geo_country AS country, min(published) AS event_time FROM {db}.${EVENTS_TABLE} FINAL
          WHERE published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')} AND geo_country != '' AND org = {org:String}
          GROUP BY org, actor, country ORDER BY actor, country`,
    params: { org: 'country-fire' },
  });

  it('alerts each row once; a later run returning the same rows alerts nothing; a re-run of a window gives the same ids', async () => {
    const first = await runScheduledOnce(store, rule, empty(), NOW);
    expect(first.alerts.map((a) => [a.org, a.key])).toEqual([['country-fire', '["bob","NO"]']]);
    expect(first.alerts[0]!.event_time).toBe(new Date(NOW - H).toISOString());
    const again = await runScheduledOnce(store, rule, first.state, NOW + H);
    expect(again.alerts).toEqual([]);
    expect(again.rows).toBe(1);
    const rerun = await runScheduledOnce(store, rule, empty(), NOW);
    expect(rerun.alerts.map((a) => a.alert_id)).toEqual(first.alerts.map((a) => a.alert_id));
  });

  it('declaring risk, a row carries its user (the id and login columns) and the contribution from its time', async () => {
    const risky = compileRule({
      id: 'countries-risk',
      type: 'scheduled',
      every_ms: H,
      lookback_ms: 7 * DAY,
      key: ['actor', 'country'],
      sql: rule
        .scheduled!.sql!.replace(
          'actor_alternate_id AS actor,',
          "actor_alternate_id AS actor, 'ID' || actor_alternate_id AS user_id, actor_alternate_id AS user_login,",
        )
        .replace('GROUP BY org, actor,', 'GROUP BY org, actor, user_id, user_login,'),
      params: { org: 'country-fire' },
      risk: { level: 'medium', ttl: '2h', reason: 'a new country' },
    });
    const { alerts } = await runScheduledOnce(store, risky, empty(), NOW);
    expect(alerts.map((a) => a.risk)).toEqual([
      {
        entity: { type: 'user', id: 'IDbob', login: 'bob' },
        level: 'medium',
        reason: 'a new country',
        expires_at: new Date(NOW - H + 2 * H).toISOString(),
      },
    ]);
  });

  it('forgets a key not returned for lookback + every, which bounds the state', async () => {
    const first = await runScheduledOnce(store, rule, empty(), NOW);
    const later = await runScheduledOnce(store, rule, first.state, NOW + 9 * DAY);
    expect(later.rows).toBe(0);
    expect(later.state.seen).toEqual({});
  });

  it('refuses a rule without a key, or with both sql and query, at compile time', () => {
    expect(() =>
      compileRule({ id: 'x', type: 'scheduled', every_ms: 1000, lookback_ms: 1000, sql: 'SELECT 1' }),
    ).toThrow('key');
    expect(() =>
      compileRule({
        id: 'x',
        type: 'scheduled',
        every_ms: 1000,
        lookback_ms: 1000,
        key: ['a'],
        sql: 'SELECT 1',
        query: 'q',
      }),
    ).toThrow('exactly one');
  });
});

describe('the scheduler on a stream', () => {
  it('appends the alerts with its checkpoint and, restarted, repeats none', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-scheduler-'));
    const stream = await openEmbeddedStream({ dataDir, logger: silentLogger() });
    try {
      await stream.ensureTopics([
        { name: 'alerts', partitions: 1 },
        { name: 'state', partitions: 1, compacted: true },
      ]);
      const rules: CompiledRule[] = loadRulePaths([join(CONTENT, 'baselines.yaml')]).flatMap((f) => f.rules);
      let clock = NOW + 1;
      const opts = {
        stream,
        store,
        rules,
        alertsTopic: 'alerts',
        stateTopic: 'state',
        group: 'g',
        telemetry: createAlertingTelemetry(silentLogger()),
        now: () => clock,
      };
      const count = async () => {
        const seen: string[] = [];
        const c = await stream.consume({
          topic: 'alerts',
          group: randomName('r'),
          maxBatchWaitMs: 10,
          handler: async (b) => void seen.push(...b.records.map((r) => r.headers['hooklog-alert-id']!)),
        });
        const end = stream.endOffsets('alerts');
        await waitFor(() => seen.length, {
          until: (total) => total >= [...end.values()].reduce((a, b) => a + b, 0),
          what: 'alerts read',
        });
        await c.stop();
        return seen;
      };
      let s = await startScheduler(opts);
      await waitFor(async () => (await stream.readLatestByKey('state')).size, {
        until: (total) => total === 2,
        what: 'both rules checkpointed',
      });
      await s.stop();
      const once = await count();
      expect(once).toHaveLength(2); // first country (country-fire) and rare OS (os-fire)
      clock += 30 * 60_000; // a later window: the same rows again
      s = await startScheduler(opts);
      await waitFor(
        async () => {
          const st = await stream.readLatestByKey('state');
          return [...st.values()].map((r) => (JSON.parse(r.value.toString()) as ScheduledState).last);
        },
        { until: (lastRuns) => lastRuns.every((last) => last > NOW), what: 'a second run of both rules' },
      );
      await s.stop();
      expect(await count()).toEqual(once);
    } finally {
      await stream.close();
    }
  });
});
