/** Test events and a rule set with known findings, shared by the alerting tests and the kill -9 fixture. */
import { createHash } from 'node:crypto';
import { Header } from '../../../platform/stream/headers.js';
import type { StreamRecord } from '../../../platform/stream/types.js';

export const T0 = Date.parse('2024-05-01T10:00:00Z');

export const TEST_RULES = [
  { id: 'grant', severity: 'high', detection: { s: { eventType: 'user.account.privilege.grant' }, condition: 's' } },
  {
    id: 'brute',
    type: 'threshold',
    threshold: 3,
    window_ms: 300_000,
    group_by: ['client.ipAddress'],
    detection: { s: { eventType: 'user.session.start', 'outcome.result': 'FAILURE' }, condition: 's' },
  },
];

/**
 * `n` rounds per org; round i has one privilege grant and 3 login failures
 * from IP ip-i within a minute: 2 findings per round (1 match, 1 threshold).
 * Events of one round are emitted slightly out of order.
 */
export function findingEvents(
  orgs: readonly string[],
  rounds: number,
): { records: StreamRecord[]; expectedFindings: number } {
  const records: StreamRecord[] = [];
  let seq = 0;
  for (let i = 0; i < rounds; i++) {
    for (const org of orgs) {
      const base = T0 + i * 600_000;
      const mk = (eventType: string, dt: number, result: string) => {
        const ev = {
          uuid: `${org}-${i}-${seq++}`,
          published: new Date(base + dt).toISOString(),
          eventType,
          outcome: { result },
          actor: { alternateId: `user${i}@${org}.example` },
          client: { ipAddress: `10.0.${i % 250}.${i % 7}` },
        };
        return {
          key: org,
          value: Buffer.from(JSON.stringify(ev)),
          headers: { [Header.org]: org, [Header.source]: 'hook' },
        };
      };
      records.push(
        mk('user.session.start', 20_000, 'FAILURE'),
        mk('user.session.start', 5_000, 'FAILURE'),
        mk('user.account.privilege.grant', 30_000, 'SUCCESS'),
      );
      records.push(mk('user.session.start', 40_000, 'FAILURE'), mk('user.session.start', 50_000, 'SUCCESS'));
    }
  }
  return { records, expectedFindings: rounds * orgs.length * 2 };
}

/** A stateful rule (impossible travel) for the kill -9 fixture. */
export const TRAVEL_RULES = [
  {
    id: 'travel',
    type: 'stateful',
    group_by: ['actor.alternateId'],
    detection: 'eventType eq "user.session.start" and outcome.result eq "SUCCESS"',
    fields: { lat: 'client.geographicalContext.geolocation.lat', lon: 'client.geographicalContext.geolocation.lon' },
    when: 'prev.lat != null and km(prev.lat, prev.lon, lat, lon) > 100 and km(prev.lat, prev.lon, lat, lon) / max((time - prev.time) / 3600000, 1 / 3600) > 900',
  },
];

/**
 * `rounds` per org, 6 h apart; in round i user u<i mod 5> signs in from Paris, from New York an hour
 * later (a finding) and from New York again two hours after that (no finding). The New York sign-in
 * is sent before the Paris one: out of order, within an allowed lateness of 2 h.
 */
export function travelEvents(
  orgs: readonly string[],
  rounds: number,
): { records: StreamRecord[]; expectedFindings: number } {
  const records: StreamRecord[] = [];
  for (let i = 0; i < rounds; i++) {
    // Every org's first New York sign-in, then every Paris one, then the second New York ones:
    // each org's events are out of order, and no event is behind another org's by more than 2 h.
    const round: StreamRecord[][] = [[], [], []];
    for (const org of orgs) {
      const base = T0 + i * 6 * 3_600_000;
      const mk = (n: number, dt: number, lat: number, lon: number) => {
        const ev = {
          uuid: `${org}-travel-${i}-${n}`,
          published: new Date(base + dt).toISOString(),
          eventType: 'user.session.start',
          outcome: { result: 'SUCCESS' },
          actor: { alternateId: `u${i % 5}@${org}.example` },
          client: { geographicalContext: { geolocation: { lat, lon } } },
        };
        return {
          key: org,
          value: Buffer.from(JSON.stringify(ev)),
          headers: { [Header.org]: org, [Header.source]: 'hook' },
        };
      };
      round[0]!.push(mk(1, 3_600_000, 40.7128, -74.006));
      round[1]!.push(mk(0, 0, 48.8566, 2.3522));
      round[2]!.push(mk(2, 3 * 3_600_000, 40.7128, -74.006));
    }
    records.push(...round.flat());
  }
  // The last round's pair is decided once a later event moves the watermark past it: one more round
  // per org, of a different user, which brings no finding of its own.
  for (const org of orgs) {
    const ev = {
      uuid: `${org}-travel-end`,
      published: new Date(T0 + (rounds + 1) * 6 * 3_600_000).toISOString(),
      eventType: 'x',
    };
    records.push({
      key: org,
      value: Buffer.from(JSON.stringify(ev)),
      headers: { [Header.org]: org, [Header.source]: 'hook' },
    });
  }
  return { records, expectedFindings: rounds * orgs.length };
}

/** A canonical UUID derived from `name` (an event hook refuses any other), the same for the same name. */
function uuidOf(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Impossible travel declaring risk: a finding holds its user at `level` for `ttl` (event time). */
export function riskTravelRules(ttl: string, level: 'low' | 'medium' | 'high' = 'high') {
  return [{ ...TRAVEL_RULES[0]!, risk: { level, ttl, reason: 'Sign-ins too far apart for the time between them' } }];
}

/**
 * One impossible trip per user of `org`, near the wall clock: Paris at `tripAt` − `gapMs` (1 h), New York at `tripAt`
 * (the finding, at `tripAt`), then one event of another kind at `endAt` that moves the watermark past them
 * (allowed lateness 0). The user's actor carries id `00u<name>`, login `<name>@<org>.example`, type User.
 */
export function riskTravelEvents(
  org: string,
  trips: Array<{ user: string; tripAt: number }>,
  endAt: number,
  gapMs = 3_600_000,
) {
  const records: StreamRecord[] = [];
  const mk = (name: string, at: number, user: string | null, lat: number, lon: number) => ({
    key: org,
    value: Buffer.from(
      JSON.stringify({
        uuid: uuidOf(name),
        published: new Date(at).toISOString(),
        eventType: user ? 'user.session.start' : 'system.tick',
        outcome: { result: 'SUCCESS' },
        ...(user ? { actor: { id: `00u${user}`, alternateId: `${user}@${org}.example`, type: 'User' } } : {}),
        client: { geographicalContext: { geolocation: { lat, lon } } },
      }),
    ),
    headers: { [Header.org]: org, [Header.source]: 'hook' },
  });
  const timed: Array<[number, StreamRecord]> = [];
  for (const t of trips) {
    timed.push([t.tripAt - gapMs, mk(`${org}-${t.user}-paris-${t.tripAt}`, t.tripAt - gapMs, t.user, 48.8566, 2.3522)]);
    timed.push([t.tripAt, mk(`${org}-${t.user}-ny-${t.tripAt}`, t.tripAt, t.user, 40.7128, -74.006)]);
  }
  // In event time order: with no allowed lateness an event behind the newest is late.
  records.push(...timed.sort((a, b) => a[0] - b[0]).map(([, r]) => r));
  records.push(mk(`${org}-end-${endAt}`, endAt, null, 0, 0));
  return records;
}
