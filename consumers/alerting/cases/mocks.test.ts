/**
 * Issue 39, "Cases": state a rule reads set by `mocks:` (and by the anchor's
 * own `Mocks:` form), selecting rules and cases, failures that explain
 * themselves, one broken file as one error while the rest run, and no event
 * time made up in silence.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadCases } from './load.js';
import { renderJunit } from './report.js';
import { runCases } from './run.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-mocks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const opts = { allowedLatenessMs: 300_000 };

function folder(name: string, files: Record<string, unknown>): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  for (const [f, v] of Object.entries(files)) writeFileSync(join(d, f), typeof v === 'string' ? v : stringify(v));
  return d;
}

async function outcomes(d: string, filter = {}) {
  const report = await runCases(loadCases([d], {}, filter), opts);
  return report.results.map((r) => [r.rule, r.name, r.status, r.message]);
}

const signin = (login: string, country: string, geo?: { lat: number; lon: number }) => ({
  eventType: 'user.session.start',
  outcome: { result: 'SUCCESS' },
  actor: { alternateId: login },
  client: { geographicalContext: { country, ...(geo ? { geolocation: geo } : {}) } },
});

const newCountry = {
  id: 'acme.new_country',
  type: 'first_seen',
  detection: 'eventType eq "user.session.start" and outcome.result eq "SUCCESS"',
  group_by: ['actor.alternateId'],
  distinct_field: 'client.geographicalContext.country',
  window_ms: 90 * 86_400_000,
};

const travel = {
  id: 'acme.travel',
  type: 'stateful',
  detection: 'eventType eq "user.session.start"',
  group_by: ['actor.alternateId'],
  fields: { lat: 'client.geographicalContext.geolocation.lat', lon: 'client.geographicalContext.geolocation.lon' },
  when: 'prev.lat != null and km(prev.lat, prev.lon, lat, lon) / max((time - prev.time) / 3600000, 1 / 3600) > 900',
};

describe('mocks: the state a rule reads, with no earlier events', () => {
  it('first_seen: the seen set of the group decides; without it the group is learning', async () => {
    const d = folder('seen', {
      'r.yaml': [
        {
          ...newCountry,
          cases: [
            {
              name: 'France, new after the US',
              at: '0s',
              alert: true,
              key: ['bob@example.com'],
              mocks: { seen: [{ values: ['US'], at: '-2d' }] },
              event: signin('bob@example.com', 'FR'),
            },
            {
              name: 'the US again',
              at: '0s',
              alert: false,
              mocks: { seen: [{ key: ['bob@example.com'], values: ['us', 'DE'] }] },
              event: signin('bob@example.com', 'US'),
            },
            {
              name: "another user's history is not bob's",
              at: '0s',
              alert: false,
              mocks: { seen: [{ key: ['eve@example.com'], values: ['US'] }] },
              event: signin('bob@example.com', 'FR'),
            },
            {
              name: 'history older than the window is forgotten',
              at: '0s',
              alert: false,
              mocks: { seen: [{ values: ['US'], at: '-91d' }] },
              event: signin('bob@example.com', 'FR'),
            },
            { name: 'no mocks: learning', at: '0s', alert: false, event: signin('bob@example.com', 'FR') },
          ],
        },
      ],
    });
    expect((await outcomes(d)).map((r) => [r[1], r[2]])).toEqual([
      ['France, new after the US', 'passed'],
      ['the US again', 'passed'],
      ["another user's history is not bob's", 'passed'],
      ['history older than the window is forgotten', 'passed'],
      ['no mocks: learning', 'passed'],
    ]);
  });

  it("stateful: the group's previous event (its fields and time) decides", async () => {
    const berlin = { lat: 52.52, lon: 13.4 };
    const sydney = { lat: -33.87, lon: 151.21 };
    const d = folder('previous', {
      'r.yaml': [
        {
          ...travel,
          cases: [
            {
              name: 'Berlin an hour ago, Sydney now',
              at: '0s',
              alert: true,
              count: 2,
              mocks: { previous: [{ fields: berlin, at: '-1h' }] },
              event: signin('bob@example.com', 'AU', sydney),
            },
            {
              name: 'Berlin two days ago, Sydney now',
              at: '0s',
              alert: false,
              mocks: { previous: [{ key: ['bob@example.com'], fields: berlin, at: '-2d' }] },
              event: signin('bob@example.com', 'AU', sydney),
            },
            { name: 'no previous event', at: '0s', alert: false, event: signin('bob@example.com', 'AU', sydney) },
          ],
        },
      ],
    });
    expect((await outcomes(d)).map((r) => [r[1], r[2], r[3]])).toEqual([
      ['Berlin an hour ago, Sydney now', 'passed', ''],
      ['Berlin two days ago, Sydney now', 'passed', ''],
      ['no previous event', 'passed', ''],
    ]);
  });

  it("the anchor's form, Panther's Mocks list, converts by what each value is", async () => {
    const d = folder('panther', {
      'r.yaml': [
        {
          ...newCountry,
          cases: [
            {
              name: 'get_string_set returns the seen set; put_string_set is a write stub',
              at: '0s',
              alert: true,
              mocks: [
                { objectName: 'get_string_set', returnValue: '["US"]' },
                { objectName: 'put_string_set', returnValue: '' },
              ],
              event: signin('bob@example.com', 'FR'),
            },
            {
              name: 'an empty set: a new user, learning',
              at: '0s',
              alert: false,
              mocks: [{ objectName: 'get_string_set', returnValue: '[]' }],
              event: signin('bob@example.com', 'FR'),
            },
          ],
        },
        {
          ...travel,
          cases: [
            {
              name: 'get_dictionary returns the previous values and time',
              at: '0s',
              alert: true,
              mocks: [
                {
                  objectName: 'get_dictionary',
                  returnValue: '{"lat": 52.52, "lon": 13.4, "time": "2025-12-31T23:00:00Z"}',
                },
              ],
              event: signin('bob@example.com', 'AU', { lat: -33.87, lon: 151.21 }),
            },
          ],
        },
      ],
    });
    expect((await outcomes(d)).map((r) => [r[1], r[2], r[3]])).toEqual([
      ['get_string_set returns the seen set; put_string_set is a write stub', 'passed', ''],
      ['an empty set: a new user, learning', 'passed', ''],
      ['get_dictionary returns the previous values and time', 'passed', ''],
    ]);
  });

  it('a mock the rule does not read is an error, not ignored', async () => {
    const ev = signin('bob@example.com', 'FR', { lat: 1, lon: 2 });
    const d = folder('bad-mocks', {
      'r.yaml': [
        {
          id: 'm.match',
          detection: 'eventType eq "user.session.start"',
          cases: [
            { name: 'seen on a match rule', at: '0s', alert: true, mocks: { seen: [{ values: ['x'] }] }, event: ev },
          ],
        },
        {
          ...travel,
          cases: [
            {
              name: 'a field the rule does not have',
              at: '0s',
              alert: true,
              mocks: { previous: [{ fields: { lat: 1, city: 'Berlin' } }] },
              event: ev,
            },
            {
              name: 'a key of two',
              at: '0s',
              alert: true,
              mocks: { previous: [{ key: ['a', 'b'], fields: {} }] },
              event: ev,
            },
            { name: 'enrichment', at: '0s', alert: true, mocks: { enrichment: { geo: {} } }, event: ev },
            {
              name: 'enrichment of no address',
              at: '0s',
              alert: true,
              mocks: { enrichment: { 'not-an-ip': { asn: { number: 1 } } } },
              event: ev,
            },
            {
              name: 'a Panther boolean',
              at: '0s',
              alert: true,
              mocks: [{ objectName: 'is_ip_in_network', returnValue: 'true' }],
              event: ev,
            },
          ],
        },
      ],
    });
    expect((await outcomes(d)).map((r) => [r[1], r[2], r[3]])).toEqual([
      [
        'seen on a match rule',
        'error',
        'mocks.seen is state of first_seen rules; m.match is a match rule and reads none',
      ],
      ['a field the rule does not have', 'error', 'mocks.previous.0: "city" not among the rule\'s fields (lat, lon)'],
      [
        'a key of two',
        'error',
        'mocks.previous.0: the rule groups by 1 field (actor.alternateId), the key has 2 values',
      ],
      ['enrichment', 'error', 'mocks.enrichment: "geo" is not an IP address (keys are client.ipAddress values)'],
      [
        'enrichment of no address',
        'error',
        'mocks.enrichment: "not-an-ip" is not an IP address (keys are client.ipAddress values)',
      ],
      [
        'a Panther boolean',
        'error',
        'mock "is_ip_in_network" returns "true": a stateful rule reads previous values (an object); lookups are not built yet, and GeoIP answers are `mocks.enrichment`',
      ],
    ]);
  });
});

describe("mocks.enrichment: the GeoIP answers a case's events get", () => {
  const at = (ip: string, own?: Record<string, unknown>) => ({
    eventType: 'user.session.start',
    actor: { alternateId: 'bob@example.com' },
    client: { ipAddress: ip, ...(own ? { geographicalContext: own } : {}) },
  });
  const answers = {
    '198.51.100.7': { geo: { country: 'FR', city: 'Paris' }, asn: { number: 64500, organization: 'Example Transit' } },
    '2001:DB8::1': { asn: { number: 64501 } },
  };

  it("by client.ipAddress, looked up as on append: the event's own location wins, its own key is not it", async () => {
    const d = folder('enrichment', {
      'r.yaml': [
        {
          id: 'e.asn',
          detection: 'enrichment.asn.number eq 64500 and enrichment.asn.organization co "transit"',
          cases: [
            { name: 'mocked AS', at: '0s', alert: true, mocks: { enrichment: answers }, event: at('198.51.100.7') },
            { name: 'another address', at: '0s', alert: false, mocks: { enrichment: answers }, event: at('192.0.2.1') },
            { name: 'no mock: no enrichment', at: '0s', alert: false, event: at('198.51.100.7') },
            {
              name: "the event's own key is not the enrichment",
              at: '0s',
              alert: false,
              event: { ...at('198.51.100.7'), enrichment: { asn: { number: 64500, organization: 'transit' } } },
            },
          ],
        },
        {
          id: 'e.geo',
          detection: 'enrichment.geo.country eq "FR" or enrichment.asn.number eq 64501',
          cases: [
            { name: 'mocked city', at: '0s', alert: true, mocks: { enrichment: answers }, event: at('198.51.100.7') },
            {
              name: 'located by the event itself',
              at: '0s',
              alert: false,
              mocks: { enrichment: answers },
              event: at('198.51.100.7', { country: 'Germany', city: 'Berlin' }),
            },
            { name: 'IPv6, any case', at: '0s', alert: true, mocks: { enrichment: answers }, event: at('2001:db8::1') },
          ],
        },
      ],
    });
    expect((await outcomes(d)).map((r) => [r[0], r[1], r[2], r[3]])).toEqual([
      ['e.asn', 'mocked AS', 'passed', ''],
      ['e.asn', 'another address', 'passed', ''],
      ['e.asn', 'no mock: no enrichment', 'passed', ''],
      ['e.asn', "the event's own key is not the enrichment", 'passed', ''],
      ['e.geo', 'mocked city', 'passed', ''],
      ['e.geo', 'located by the event itself', 'passed', ''],
      ['e.geo', 'IPv6, any case', 'passed', ''],
    ]);
  });
});

describe('no event time made up in silence', () => {
  const rule = { id: 't.any', detection: 'eventType eq "x"' };
  it('an event without a valid published is an error unless the event or the case gives at:', async () => {
    const d = folder('published', {
      'r.yaml': [
        {
          ...rule,
          cases: [
            { name: 'none', alert: true, event: { eventType: 'x' } },
            { name: 'unparseable', alert: true, event: { eventType: 'x', published: 'yesterday\u200b' } },
            {
              name: 'the second of two',
              alert: true,
              events: [{ event: { eventType: 'x', published: '2026-01-01T00:00:00Z' } }, { event: { eventType: 'x' } }],
            },
            { name: 'its own published', alert: true, event: { eventType: 'x', published: '2026-01-01 10:00:00' } },
            { name: 'its own at', alert: true, events: [{ at: '5m', event: { eventType: 'x', published: 'no' } }] },
            { name: "the case's at", at: '1h', alert: true, event: { eventType: 'x' } },
          ],
        },
      ],
    });
    expect((await outcomes(d)).map((r) => [r[1], r[2], r[3]])).toEqual([
      [
        'none',
        'error',
        'the event has no `published`: give it a valid `published` (ISO-8601) or `at:`, or give the case `at:` (events without a time then follow it 1 s apart)',
      ],
      [
        'unparseable',
        'error',
        'the event has `published` "yesterday\\u200b", not a time: give it a valid `published` (ISO-8601) or `at:`, or give the case `at:` (events without a time then follow it 1 s apart)',
      ],
      ['the second of two', 'error', expect.stringMatching(/^event 2 has no `published`: /)],
      ['its own published', 'passed', ''],
      ['its own at', 'passed', ''],
      ["the case's at", 'passed', ''],
    ]);
  });
});

describe('one broken file is one error; the rest run', () => {
  it('an unknown function in one rule file: an error entry for it, the other files pass, JUnit written', async () => {
    const d = folder('broken', {
      'good.yaml': [
        {
          id: 'g.1',
          detection: 'eventType eq "x"',
          cases: [{ name: 'fires', at: '0s', alert: true, event: { eventType: 'x' } }],
        },
      ],
      'broken.yaml': [
        {
          id: 'b.1',
          type: 'stateful',
          detection: 'eventType eq "x"',
          fields: { n: 'debugContext.debugData.n' },
          when: 'frobnicate(n) > 1',
          cases: [{ name: 'never runs', at: '0s', alert: true, event: { eventType: 'x' } }],
        },
      ],
    });
    const report = await runCases(loadCases([d]), opts);
    expect(report.results.map((r) => [r.file.split('/').pop(), r.rule, r.status, r.message])).toEqual([
      [
        'broken.yaml',
        '',
        'error',
        expect.stringMatching(/^the rule file does not load: .*unknown function frobnicate\(\)/),
      ],
      ['good.yaml', 'g.1', 'passed', ''],
    ]);
    const xml = renderJunit(report, { cwd: d });
    expect(xml).toContain('<testsuite name="broken.yaml" tests="1" failures="0" errors="1"');
    expect(xml).toMatch(
      /<testcase classname="broken.yaml" name="\(file\)" file="broken.yaml" line="1"[^>]*>\s*<error message="the rule file does not load/,
    );
    expect(xml).toContain('<testsuite name="good.yaml" tests="2" failures="0" errors="0"');
  });
});

describe('a correlation whose base rule is in a broken file', () => {
  it('both are reported, and the other files still run', async () => {
    const d = folder('broken-corr', {
      'base.yml':
        'title: Lock\nid: base-lock\nlogsource: { product: okta }\ndetection:\n  sel: { eventType|frob: user.account.lock }\n  condition: sel\n',
      'corr.yml':
        'title: Many locks\nid: corr-1\ncorrelation:\n  type: event_count\n  rules: [base-lock]\n  group-by: [actor.alternateId]\n  timespan: 10m\n  condition: { gte: 3 }\n',
      'ok.yaml': [
        {
          id: 'ok.1',
          detection: 'eventType eq "x"',
          cases: [{ name: 'fires', at: '0s', alert: true, event: { eventType: 'x' } }],
        },
      ],
    });
    expect((await outcomes(d)).map((r) => [r[0], r[1], r[2], r[3]])).toEqual([
      ['', '', 'error', 'the rule file does not load: rule base-lock.detection.sel: unsupported modifier |frob'],
      ['', '', 'error', expect.stringMatching(/correlation corr-1: names rule "base-lock", which is not loaded/)],
      ['ok.1', 'fires', 'passed', ''],
    ]);
  });
});

describe('choosing rules and cases', () => {
  const sigma = `title: Locked
id: sigma-locked
tags: [attack.credential_access, attack.t1110]
logsource: { product: okta }
detection:
  sel: { eventType: user.account.lock }
  condition: sel
`;
  const d = folder('filters', {
    'own.yaml': [
      {
        id: 'acme.signin.fail',
        tags: ['Identity', 'brute-force'],
        detection: 'eventType eq "user.session.start"',
        cases: [
          { name: 'a sign-in', at: '0s', alert: true, event: { eventType: 'user.session.start' } },
          { name: 'a sign-out', at: '0s', alert: false, event: { eventType: 'user.session.end' } },
        ],
      },
      {
        id: 'acme.token',
        detection: 'eventType eq "system.api_token.create"',
        cases: [{ name: 'a token', at: '0s', alert: true, event: { eventType: 'system.api_token.create' } }],
      },
    ],
    'locked.yml': sigma,
    'locked.cases.yaml': [{ name: 'a lock', at: '0s', alert: true, event: { eventType: 'user.account.lock' } }],
  });
  const names = async (filter: Record<string, string[]>) => {
    const report = await runCases(loadCases([d], {}, filter), opts);
    return { cases: report.results.map((r) => r.name), rules: report.coverage.map((c) => c.rule.id) };
  };

  it('--rule: exact ids or globs, case-sensitive', async () => {
    expect(await names({ rules: ['acme.token'] })).toEqual({ cases: ['a token'], rules: ['acme.token'] });
    expect((await names({ rules: ['acme.*'] })).rules).toEqual(['acme.signin.fail', 'acme.token']);
    expect((await names({ rules: ['ACME.*'] })).rules).toEqual([]);
    expect((await names({ rules: ['acme.token', 'sigma-?ocked'] })).cases).toEqual(['a lock', 'a token']);
  });

  it("--tag: the rule's tags (a Sigma rule's own), any case, globs", async () => {
    expect((await names({ tags: ['brute-force'] })).cases).toEqual(['a sign-in', 'a sign-out']);
    expect((await names({ tags: ['identity'] })).rules).toEqual(['acme.signin.fail']);
    expect((await names({ tags: ['attack.t1110'] })).rules).toEqual(['sigma-locked']);
    expect((await names({ tags: ['attack.*'] })).rules).toEqual(['sigma-locked']);
  });

  it('--case: case names, any case, globs; only the rules with a chosen case are reported', async () => {
    expect(await names({ cases: ['A SIGN-*'] })).toEqual({
      cases: ['a sign-in', 'a sign-out'],
      rules: ['acme.signin.fail'],
    });
    expect(await names({ cases: ['a lock'], rules: ['acme.*'] })).toEqual({ cases: [], rules: [] });
  });
});

describe('a failure explains itself', () => {
  it('the condition tree for the event that decided, each leaf with the value it saw', async () => {
    const long = `${'x'.repeat(200)}\u202e`;
    const d = folder('explain', {
      'r.yaml': [
        {
          id: 'e.filter',
          detection: 'eventType eq "user.session.start" and (outcome.result eq "FAILURE" or outcome.reason pr)',
          cases: [
            {
              name: 'a success',
              at: '0s',
              alert: true,
              event: { eventType: 'user.session.start', outcome: { result: 'SUCCESS' } },
            },
            {
              name: 'matched, unexpectedly',
              at: '0s',
              alert: false,
              event: { eventType: 'user.session.start', outcome: { result: 'FAILURE' } },
            },
          ],
        },
        {
          id: 'e.sigma',
          detection: {
            sel: { eventType: 'user.account.lock', 'actor.alternateId|endswith': '@example.com' },
            filter: { 'actor.type': 'Bot' },
            condition: 'sel and not filter',
          },
          cases: [
            {
              name: 'bounded and visible',
              at: '0s',
              alert: true,
              event: { eventType: 'user.account.lock', actor: { alternateId: long, type: 'User' } },
            },
          ],
        },
        {
          id: 'e.when',
          detection: 'eventType eq "x"',
          fields: { n: 'debugContext.debugData.n' },
          when: 'n > 3',
          cases: [
            {
              name: 'n too small',
              at: '0s',
              alert: true,
              event: { eventType: 'x', debugContext: { debugData: { n: 2 } } },
            },
          ],
        },
      ],
    });
    const rows = await outcomes(d);
    expect(rows.map((r) => [r[1], r[3]])).toEqual([
      [
        'a success',
        `expected an alert, got none: all_of[ eventType eq 'user.session.start' → "user.session.start" ✓, any_of[ outcome.result eq 'FAILURE' → "SUCCESS" ✗, outcome.reason pr → absent ✗ ] ]`,
      ],
      [
        'matched, unexpectedly',
        expect.stringMatching(
          /^expected no alert, got 1: key \[\], count 1, at [^;]+; all_of\[ eventType eq 'user.session.start' → "user.session.start" ✓, any_of\[ outcome.result eq 'FAILURE' → "FAILURE" ✓, outcome.reason pr → absent ✗ \] \]$/,
        ),
      ],
      [
        'bounded and visible',
        `expected an alert, got none: all_of[ sel: all_of[ eventType: "user.account.lock" → "user.account.lock" ✓, actor.alternateId|endswith: "@example.com" → "${'x'.repeat(58)}… ✗ ], not[ filter: actor.type: "Bot" → "User" ✗ ] ✓ ]`,
      ],
      ['n too small', `expected an alert, got none: all_of[ eventType eq 'x' → "x" ✓, when n > 3 → n=2 ✗ ]`],
    ]);
  });

  it("a stateful rule's `when`, with the previous event it was judged against (mocked, or earlier in the case)", async () => {
    const sydney = signin('bob@example.com', 'AU', { lat: -33.87, lon: 151.21 });
    const d = folder('explain-stateful', {
      'r.yaml': [
        {
          ...travel,
          cases: [
            {
              name: 'Berlin two days before, mocked',
              at: '0s',
              alert: true,
              mocks: { previous: [{ fields: { lat: 52.52, lon: 13.4 }, at: '-2d' }] },
              event: sydney,
            },
            {
              name: 'Sydney twice',
              at: '0s',
              alert: true,
              events: [{ event: sydney }, { at: '1h', event: sydney }],
            },
            { name: 'nothing before', at: '0s', alert: true, event: sydney },
            {
              name: 'Berlin an hour before, mocked, not expected',
              at: '0s',
              alert: false,
              mocks: { previous: [{ fields: { lat: 52.52, lon: 13.4 }, at: '-1h' }] },
              event: sydney,
            },
          ],
        },
      ],
    });
    const when = `when ${travel.when.replaceAll('"', '\\"')}`;
    expect((await outcomes(d)).map((r) => r[3])).toEqual([
      `expected an alert, got none: all_of[ eventType eq 'user.session.start' → "user.session.start" ✓, ${when} → ` +
        'time=2026-01-01T00:00:00.000Z, lat=-33.87, lon=151.21, prev.lat=52.52, prev.lon=13.4, prev.time=2025-12-30T00:00:00.000Z ✗ ]',
      `expected an alert, got none: event 2 of 2: all_of[ eventType eq 'user.session.start' → "user.session.start" ✓, ${when} → ` +
        'time=2026-01-01T01:00:00.000Z, lat=-33.87, lon=151.21, prev.lat=-33.87, prev.lon=151.21, prev.time=2026-01-01T00:00:00.000Z ✗ ]',
      `expected an alert, got none: all_of[ eventType eq 'user.session.start' → "user.session.start" ✓, ${when} → lat=-33.87, lon=151.21, prev=null ✗ ]`,
      expect.stringMatching(
        /; all_of\[ .* → time=2026-01-01T00:00:00.000Z, lat=-33.87, lon=151.21, prev.lat=52.52, prev.lon=13.4, prev.time=2025-12-31T23:00:00.000Z ✓ \]$/,
      ),
    ]);
  });

  it("a first_seen rule's value, and what its group had seen (mocked, or earlier in the case)", async () => {
    const d = folder('explain-first-seen', {
      'r.yaml': [
        {
          ...newCountry,
          cases: [
            {
              name: 'France was seen',
              at: '0s',
              alert: true,
              mocks: { seen: [{ values: ['US', 'FR'] }] },
              event: signin('bob@example.com', 'FR'),
            },
            { name: 'learning', at: '0s', alert: true, event: signin('bob@example.com', 'FR') },
            {
              name: 'France earlier in the case',
              at: '0s',
              alert: true,
              events: [
                { event: signin('bob@example.com', 'FR') },
                { at: '1d', event: signin('bob@example.com', 'fr') },
              ],
            },
          ],
        },
      ],
    });
    const det = `eventType eq 'user.session.start' → "user.session.start" ✓, outcome.result eq 'SUCCESS' → "SUCCESS" ✓`;
    expect((await outcomes(d)).map((r) => r[3])).toEqual([
      `expected an alert, got none: all_of[ ${det}, client.geographicalContext.country new for the group → "fr", seen before ["us","fr"] ✗ ]`,
      `expected an alert, got none: all_of[ ${det}, client.geographicalContext.country new for the group → "fr", nothing seen before (learning) ✗ ]`,
      `expected an alert, got none: event 2 of 2: all_of[ ${det}, client.geographicalContext.country new for the group → "fr", seen before ["fr"] ✗ ]`,
    ]);
  });

  it('a sequence explains both steps; events the detection all took say so', async () => {
    const d = folder('explain-seq', {
      'r.yaml': [
        {
          id: 'e.threshold',
          type: 'threshold',
          threshold: 3,
          window_ms: 60_000,
          detection: 'eventType eq "x"',
          cases: [{ name: 'two', at: '0s', alert: true, events: [{ event: { eventType: 'x' }, repeat: 2 }] }],
        },
        {
          id: 'e.seq',
          type: 'sequence',
          window_ms: 60_000,
          first: 'eventType eq "a"',
          then: 'eventType eq "b"',
          cases: [{ name: 'only c', at: '0s', alert: true, event: { eventType: 'c' } }],
        },
      ],
    });
    expect((await outcomes(d)).map((r) => r[3])).toEqual([
      'expected an alert, got none; the detection took all 2 events: what the threshold rule needs beyond it (window, count, state) was not met',
      `expected an alert, got none: all_of[ first: eventType eq 'a' → "c" ✗, then: eventType eq 'b' → "c" ✗ ]`,
    ]);
  });
});
