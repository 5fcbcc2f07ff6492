/**
 * The System Log filter language: parsing, its meaning on an event, and the
 * same meaning in ClickHouse (every expression below is also compiled to SQL
 * and run over the same events in a real engine; both must pick the same ones).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertChunk } from '../../../bench/analytics/load.js';
import { silentLogger } from '../../../platform/log.js';
import { migrate, openStore, type Store } from '../../../platform/store/index.js';
import { randomName } from '../../../test/support/wait.js';
import { compileFilter } from './evaluate.js';
import { FilterSyntaxError, parseFilter } from '../../../platform/filter/parse.js';
import { compileFilterSql } from '../../../platform/filter/sql.js';
import { EVENTS_TABLE } from '../../../schemas/tables.js';

function ev(uuid: string, over: Record<string, unknown>): Record<string, unknown> {
  return {
    uuid,
    published: '2026-03-02T10:00:00.000Z',
    eventType: 'user.session.start',
    actor: { id: '00u1', type: 'User', alternateId: 'alice@example.com' },
    client: { ipAddress: '198.51.100.7' },
    outcome: { result: 'SUCCESS' },
    securityContext: { isProxy: false },
    target: [{ id: 'app1', type: 'AppInstance', displayName: 'Okta Admin Console' }],
    ...over,
  };
}

const EVENTS: Record<string, Record<string, unknown>> = {
  plain: ev('e-plain', {}),
  failed: ev('e-failed', { outcome: { result: 'FAILURE', reason: 'INVALID_CREDENTIALS' } }),
  proxy: ev('e-proxy', { securityContext: { isProxy: true } }),
  twoTargets: ev('e-two', {
    eventType: 'user.authentication.verify',
    target: [
      { id: 'u1', type: 'User', displayName: 'Bob' },
      { id: 'app2', type: 'AppInstance', displayName: 'AWS Console', detailEntry: { methodTypeUsed: 'sms' } },
    ],
  }),
  risky: ev('e-risk', {
    eventType: 'user.risk.detect',
    debugContext: { debugData: { risk: '{level=HIGH, detectionName=Session Influenced}', count: 7 } },
  }),
  noOutcome: ev('e-none', { outcome: null, client: { ipAddress: '203.0.113.1', userAgent: { os: 'Mac OS X' } } }),
  policyJson: ev('e-json', {
    eventType: 'policy.rule.update',
    target: [
      { id: 'p', displayName: 'Policy' },
      {
        id: 'r',
        changeDetails: { to: { policyRuleActionJson: '{"appSignOn":{"verificationMethod":{"factorMode":"1FA"}}}' } },
      },
    ],
  }),
  quoted: ev('e-quote', {
    debugContext: { debugData: { logOnlySecurityData: '{"behaviors":{"New Device":"POSITIVE"}}' } },
  }),
};

/** expression → names of the events it must match */
const CASES: Array<[string, string[]]> = [
  ['eventType eq "user.session.start"', ['plain', 'failed', 'proxy', 'noOutcome', 'quoted']],
  ['EVENTTYPE EQ "USER.SESSION.START" AND outcome.result eq "failure"', ['failed']],
  ['outcome.result ne "SUCCESS"', ['failed', 'noOutcome']],
  ['outcome.result pr', ['plain', 'failed', 'proxy', 'twoTargets', 'risky', 'policyJson', 'quoted']],
  ['not (outcome.result pr)', ['noOutcome']],
  ['outcome.reason eq null', ['plain', 'proxy', 'twoTargets', 'risky', 'noOutcome', 'policyJson', 'quoted']],
  ['eventType sw "user.authentication"', ['twoTargets']],
  ['eventType ew ".start" and client.ipAddress sw "203."', ['noOutcome']],
  ['target.displayName co "aws"', ['twoTargets']],
  ['target.0.displayName eq "Bob"', ['twoTargets']],
  ['target.1.displayName eq "Bob"', []],
  ['target.detailEntry.MethodTypeUsed eq "sms"', ['twoTargets']],
  ['securityContext.isProxy eq "true"', ['proxy']],
  ['securityContext.isProxy eq false and eventType eq "user.risk.detect"', ['risky']],
  ['debugContext.debugData.risk co " level=HIGH" or debugContext.debugData.risk co "{level=HIGH"', ['risky']],
  ['debugContext.debugData.count gt 5', ['risky']],
  ['debugContext.debugData.count le 5', []],
  [
    'published ge "2026-03-02T10:00:00Z" and published lt "2026-03-02T10:00:00.001Z" and eventType eq "user.risk.detect"',
    ['risky'],
  ],
  ['eventType in ["user.risk.detect", "policy.rule.update"]', ['risky', 'policyJson']],
  // `in` is `eq` for one value, and `eq null` holds on an absent attribute too.
  [
    'outcome.reason in [null, "INVALID_CREDENTIALS"]',
    ['plain', 'failed', 'proxy', 'twoTargets', 'risky', 'noOutcome', 'policyJson', 'quoted'],
  ],
  ['client.userAgent.os in [null]', ['plain', 'failed', 'proxy', 'twoTargets', 'risky', 'policyJson', 'quoted']],
  ['result eq "FAILURE"', ['failed']],
  // An object is no scalar: it orders against nothing (its JSON text once compared as text in ClickHouse).
  ['outcome gt "a" or target gt "a" or securityContext le "z"', []],
  ['target.changeDetails.to.policyRuleActionJson.appSignOn.verificationMethod.factorMode eq "1FA"', ['policyJson']],
  ['debugContext.debugData.logOnlySecurityData co "\\"New Device\\":\\"POSITIVE\\""', ['quoted']],
  ['client.userAgent.os eq "mac os x" or (eventType eq "policy.rule.update" and not target.id eq "p")', ['noOutcome']],
  ['eventType eq "a" or eventType eq "user.risk.detect" and outcome.result eq "FAILURE"', []],
  [
    '(eventType eq "user.risk.detect" or eventType eq "policy.rule.update") and outcome.result eq "SUCCESS"',
    ['risky', 'policyJson'],
  ],
];

describe('System Log filter language on events', () => {
  for (const [expr, want] of CASES) {
    it(expr, () => {
      const p = compileFilter(expr);
      const got = Object.entries(EVENTS)
        .filter(([, e]) => p(e))
        .map(([n]) => n);
      expect(got.sort()).toEqual([...want].sort());
    });
  }

  it('binds not tighter than and, and tighter than or (SCIM precedence)', () => {
    expect(parseFilter('a pr or b pr and not c pr')).toEqual({
      op: 'or',
      items: [
        { op: 'pr', path: 'a', at: 0 },
        {
          op: 'and',
          items: [
            { op: 'pr', path: 'b', at: 8 },
            { op: 'not', item: { op: 'pr', path: 'c', at: 21 } },
          ],
        },
      ],
    });
  });

  it.each([
    ['eventType eq', 'expected a value'],
    ['eventType equals "x"', 'unknown operator "equals"'],
    ['(eventType eq "x"', 'missing )'],
    ['eventType eq "x" and', 'expected an attribute name'],
    ['eventType eq "unterminated', 'unterminated string'],
    ['eventType in "x"', '`in` needs a list'],
    ['eventType eq "x" extra', 'unexpected'],
    ['eventType eq "x" # comment', 'unexpected character'],
  ])('refuses %s, saying where', (expr, msg) => {
    let err: unknown;
    try {
      parseFilter(expr);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FilterSyntaxError);
    expect((err as Error).message).toContain(msg);
    expect((err as FilterSyntaxError).offset).toBeGreaterThanOrEqual(0);
  });
});

describe('System Log filter language in ClickHouse', () => {
  let store: Store;
  beforeAll(async () => {
    store = openStore({
      database: randomName('filter'),
      dataDir: mkdtempSync(join(tmpdir(), 'hooklog-filter-')),
      logger: silentLogger(),
    });
    await migrate(store, silentLogger());
    await insertChunk(
      store,
      Object.values(EVENTS).map((event) => ({ org: 'acme', event })),
    );
  });
  afterAll(async () => store?.close());

  it('selects exactly the events the stream evaluator matches, for every expression', async () => {
    const byUuid = new Map(Object.entries(EVENTS).map(([n, e]) => [e['uuid'] as string, n]));
    for (const [expr, want] of CASES) {
      const { where, params } = compileFilterSql(expr);
      const rows = await store.query<{ uuid: string }>(
        `SELECT uuid FROM ${store.database}.${EVENTS_TABLE} FINAL WHERE org = {org:String} AND ${where}`,
        { ...params, org: 'acme' },
      );
      expect(rows.map((r) => byUuid.get(r.uuid)).sort(), expr).toEqual([...want].sort());
    }
  });

  it('binds every value and attribute name as a parameter: a hostile value is data', async () => {
    const { where, params } = compileFilterSql(
      `eventType eq "x') OR 1=1 --" or debugContext.debugData.risk co "'; DROP TABLE events_v2; --"`,
    );
    expect(where).not.toContain('DROP');
    expect(where).not.toContain('1=1');
    expect(Object.values(params)).toContain("x') or 1=1 --");
    const rows = await store.query(`SELECT uuid FROM ${store.database}.${EVENTS_TABLE} FINAL WHERE ${where}`, params);
    expect(rows).toEqual([]);
  });
});
