/**
 * Engine state is keyed by (org, id), never by the event id alone: two orgs
 * whose events carry the same uuids at the same moments, fed through one
 * engine (one stream partition holds many orgs), raise for each org exactly
 * the alerts that org's events raise alone. Every kind that keeps state per
 * key is here: windows (threshold, distinct), sequences, Sigma temporal
 * correlations, and the keyed state of stateful and first_seen rules, whose
 * waiting events once dropped the second org's copy of a uuid.
 */
import { describe, expect, it } from 'vitest';
import type { Alert } from './alert.js';
import { PartitionEngine } from './engine.js';
import { compileRule } from './rules/compile.js';
import { loadRulePaths } from './rules/sources.js';
import type { CompiledRule } from './rules/types.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const T0 = Date.parse('2026-03-02T10:00:00Z');
const MIN = 60_000;
const H = 60 * MIN;

interface Ev {
  uuid: string;
  published: string;
  eventType: string;
  actor: { alternateId: string };
  client: { ipAddress: string; geographicalContext: { country: string; geolocation?: { lat: number; lon: number } } };
  outcome: { result: string };
}

function ev(uuid: string, at: number, eventType: string, over: Partial<Ev> = {}): Ev {
  return {
    uuid,
    published: new Date(at).toISOString(),
    eventType,
    actor: { alternateId: 'bob@example.com' },
    client: { ipAddress: '198.51.100.7', geographicalContext: { country: 'FR' } },
    outcome: { result: 'FAILURE' },
    ...over,
  };
}

const failures = { sel: { eventType: 'user.session.start', 'outcome.result': 'FAILURE' }, condition: 'sel' };
const RULES: Record<string, CompiledRule> = {
  threshold: compileRule({
    id: 'bf',
    type: 'threshold',
    detection: failures,
    group_by: ['client.ipAddress'],
    window_ms: 5 * MIN,
    threshold: 3,
  }),
  distinct: compileRule({
    id: 'spray',
    type: 'distinct',
    detection: failures,
    group_by: ['client.ipAddress'],
    distinct_field: 'actor.alternateId',
    window_ms: 10 * MIN,
    threshold: 2,
  }),
  sequence: compileRule({
    id: 'fail-then-succeed',
    type: 'sequence',
    group_by: ['actor.alternateId'],
    window_ms: 30 * MIN,
    first: failures,
    then: { s: { eventType: 'user.session.start', 'outcome.result': 'SUCCESS' }, condition: 's' },
  }),
  stateful: compileRule({
    id: 'travel',
    type: 'stateful',
    detection: { sel: { eventType: 'user.session.start', 'outcome.result': 'SUCCESS' }, condition: 'sel' },
    group_by: ['actor.alternateId'],
    fields: { lat: 'client.geographicalContext.geolocation.lat', lon: 'client.geographicalContext.geolocation.lon' },
    when: 'prev.lat != null and km(prev.lat, prev.lon, lat, lon) > 1000',
  }),
  first_seen: compileRule({
    id: 'new-country',
    type: 'first_seen',
    detection: 'eventType eq "user.session.start"',
    group_by: ['actor.alternateId'],
    distinct_field: 'client.geographicalContext.country',
    window_ms: 24 * H,
  }),
};

/** A Sigma base rule and a temporal correlation over it (loaded as Sigma files are). */
function temporalRules(): CompiledRule[] {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-two-orgs-'));
  writeFileSync(
    join(dir, 'rules.yml'),
    `title: Failed sign-in
id: 0b7a5a5e-1111-4c2e-9a35-0c1d2e3f4a5b
name: failed_signin
logsource: { product: okta, service: okta }
detection:
  sel: { eventType: user.session.start, outcome.result: FAILURE }
  condition: sel
level: low
---
title: Reset after failures
id: 0b7a5a5e-2222-4c2e-9a35-0c1d2e3f4a5b
name: reset
logsource: { product: okta, service: okta }
detection:
  sel: { eventType: user.mfa.factor.reset_all }
  condition: sel
level: low
---
title: Failure then reset
id: 0b7a5a5e-3333-4c2e-9a35-0c1d2e3f4a5b
correlation:
  type: temporal
  rules: [failed_signin, reset]
  group-by: [actor.alternateId]
  timespan: 30m
level: high
`,
  );
  return loadRulePaths([dir]).flatMap((l) => l.rules);
}

const PARIS = { lat: 48.8566, lon: 2.3522 };
const NYC = { lat: 40.7128, lon: -74.006 };

/** One org's events: every rule above fires at least once on them. */
const EVENTS: Ev[] = [
  ev('00000000-0000-4000-8000-000000000001', T0, 'user.session.start'),
  ev('00000000-0000-4000-8000-000000000002', T0 + MIN, 'user.session.start', {
    actor: { alternateId: 'eve@example.com' },
  }),
  ev('00000000-0000-4000-8000-000000000003', T0 + 2 * MIN, 'user.session.start'),
  ev('00000000-0000-4000-8000-000000000004', T0 + 3 * MIN, 'user.mfa.factor.reset_all'),
  ev('00000000-0000-4000-8000-000000000005', T0 + 4 * MIN, 'user.session.start', {
    outcome: { result: 'SUCCESS' },
    client: { ipAddress: '198.51.100.7', geographicalContext: { country: 'FR', geolocation: PARIS } },
  }),
  ev('00000000-0000-4000-8000-000000000006', T0 + 2 * H, 'user.session.start', {
    outcome: { result: 'SUCCESS' },
    client: { ipAddress: '203.0.113.9', geographicalContext: { country: 'US', geolocation: NYC } },
  }),
  // Moves the watermark past everything above, so held stateful events are decided.
  ev('00000000-0000-4000-8000-000000000007', T0 + 30 * H, 'other'),
];

/** Feeds `orgs`' copies of EVENTS through one engine, each event of every org before the next event. */
function feed(rules: CompiledRule[], orgs: string[]): Alert[] {
  const engine = new PartitionEngine(rules, { allowedLatenessMs: 5 * MIN });
  return EVENTS.flatMap((e) =>
    orgs.flatMap((org) => engine.process(e, { org, timeMs: Date.parse(e.published), id: e.uuid })),
  );
}

const strip = (alerts: Alert[]) => alerts.map(({ alert_id: _id, org: _org, ...rest }) => rest);

describe('two orgs sharing event uuids at the same moments', () => {
  const cases: Array<[string, () => CompiledRule[]]> = [
    ...Object.entries(RULES).map(([kind, rule]): [string, () => CompiledRule[]] => [kind, () => [rule]]),
    ['temporal correlation', temporalRules],
  ];

  it.each(cases)('%s: each org gets the alerts its events raise alone', (_kind, rules) => {
    const alone = feed(rules(), ['acme']);
    expect(alone.length).toBeGreaterThan(0);
    const both = feed(rules(), ['acme', 'globex']);
    for (const org of ['acme', 'globex']) {
      const mine = both.filter((a) => a.org === org);
      expect(strip(mine)).toEqual(strip(alone));
    }
    // Alert ids differ by org: neither org's alert is taken for a repeat of the other's.
    expect(new Set(both.map((a) => a.alert_id)).size).toBe(both.length);
  });
});
