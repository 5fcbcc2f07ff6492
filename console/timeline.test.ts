/**
 * An alert's timeline through the console API, on the real world (hooklog
 * start, embedded stream and chdb): the alert's user's and IP's events within
 * the window around it, grouped by session, never another org's, never an
 * unrelated user's; the window widens on request; another org's alert is 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deliverAndAlert,
  deliverEvents,
  failedSignIn,
  KEY_A,
  KEY_ALL,
  ORG_A,
  ORG_B,
  startConsoleWorld,
  type ConsoleWorld,
} from './testing.js';

const VICTIM = 'tina@a.example';
const NEIGHBOUR = 'uma@a.example';
const STRANGER = 'vic@a.example';
const IP = '192.0.2.77';
const OTHER_IP = '198.51.100.23';
const MIN = 60_000;

/** An event of `user` from `ip` in session `sid`, `agoMin` minutes ago, that the test rule does not alert on. */
function quiet(user: string, ip: string, sid: string | undefined, agoMin: number) {
  return {
    ...failedSignIn(user, { ip }),
    eventType: 'user.authentication.sso',
    published: new Date(Date.now() - agoMin * MIN).toISOString(),
    ...(sid ? { authenticationContext: { externalSessionId: sid } } : {}),
  };
}

let w: ConsoleWorld;
let alertA: string;
let alertB: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  w = await startConsoleWorld();
  const fired = { ...failedSignIn(VICTIM, { ip: IP }), authenticationContext: { externalSessionId: 'sess-alert' } };
  const near = {
    sameSession: quiet(VICTIM, OTHER_IP, 'sess-alert', 20),
    otherSession: quiet(VICTIM, OTHER_IP, 'sess-two', 30),
    sameIp: quiet(NEIGHBOUR, IP, 'sess-neighbour', 40),
    noSession: quiet(NEIGHBOUR, IP, undefined, 10),
    unrelated: quiet(STRANGER, '203.0.113.99', 'sess-stranger', 15),
    longAgo: quiet(VICTIM, OTHER_IP, 'sess-old', 180),
  };
  for (const [k, e] of Object.entries(near)) ids[k] = e.uuid;
  ids.fired = fired.uuid;
  await deliverEvents(w, ORG_A, Object.values(near));
  alertA = (await deliverAndAlert(w, ORG_A, [fired]))[0]!;
  const b = { ...failedSignIn(VICTIM, { ip: IP }), authenticationContext: { externalSessionId: 'sess-alert' } };
  ids.orgB = b.uuid;
  alertB = (await deliverAndAlert(w, ORG_B, [b]))[0]!;
}, 180_000);

afterAll(async () => {
  await w?.stop();
});

interface TimelineBody {
  users: string[];
  ips: string[];
  window_minutes: number;
  sessions: Array<{ session: string; events: Array<{ uuid: string; by_user: number; from_ip: number }> }>;
}

const get = (path: string, key: string) => fetch(`${w.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
const timeline = async (id: string, key: string, window?: number): Promise<TimelineBody> => {
  const res = await get(`/console/api/alerts/${id}/timeline${window ? `?window=${window}` : ''}`, key);
  expect(res.status).toBe(200);
  return (await res.json()) as TimelineBody;
};
const bySession = (t: TimelineBody) =>
  Object.fromEntries(t.sessions.map((s) => [s.session, s.events.map((e) => e.uuid).sort()]));

describe("an alert's timeline", () => {
  it("holds the user's and the IP's events within ±1 h, grouped by session, and only the alert's org", async () => {
    const t = await timeline(alertA, KEY_A);
    expect(t).toMatchObject({ users: [VICTIM], ips: [IP], window_minutes: 60 });
    expect(bySession(t)).toEqual({
      'sess-alert': [ids.fired!, ids.sameSession!].sort(),
      'sess-two': [ids.otherSession!],
      'sess-neighbour': [ids.sameIp!],
      '': [ids.noSession!],
    });
    const all = t.sessions.flatMap((s) => s.events);
    expect(all.find((e) => e.uuid === ids.sameIp)).toMatchObject({ by_user: 0, from_ip: 1 });
    expect(all.find((e) => e.uuid === ids.otherSession)).toMatchObject({ by_user: 1, from_ip: 0 });
    // The same user and IP in org B: never in org A's timeline, even for a key that sees every org.
    expect(bySession(await timeline(alertA, KEY_ALL))).toEqual(bySession(t));
  });

  it('widens with the window asked for', async () => {
    const t = await timeline(alertA, KEY_A, 240);
    expect(t.window_minutes).toBe(240);
    expect(bySession(t)['sess-old']).toEqual([ids.longAgo!]);
    expect(t.sessions.flatMap((s) => s.events.map((e) => e.uuid))).not.toContain(ids.unrelated);
    const bad = await get(`/console/api/alerts/${alertA}/timeline?window=0`, KEY_A);
    expect(bad.status).toBe(400);
  });

  it("answers 404 for another org's alert, and org B's own timeline holds only org B's event", async () => {
    expect((await get(`/console/api/alerts/${alertB}/timeline`, KEY_A)).status).toBe(404);
    expect((await get(`/console/api/alerts/no-such-alert/timeline`, KEY_A)).status).toBe(404);
    expect(bySession(await timeline(alertB, KEY_ALL))).toEqual({ 'sess-alert': [ids.orgB!] });
  });
});
