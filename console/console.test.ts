/**
 * The console as `hooklog start` serves it (embedded stream and chdb), signed
 * in through the simulated org's OIDC: sessions, org isolation on every route
 * (pages, API, exports, query parameters naming another org), CSRF refusal,
 * session expiry, and triage through the stream with its audit trail.
 */
import { createHash } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linkValue } from './display.js';
import {
  deliverAndAlert,
  failedSignIn,
  KEY_A,
  KEY_ALL,
  ORG_A,
  ORG_B,
  postChange,
  RULE_ID,
  SESSION_SECRET,
  signIn,
  startConsoleWorld,
  USERS,
  type ConsoleWorld,
  type Signed,
} from './testing.js';

let w: ConsoleWorld;
let alertsA: string[];
let alertsB: string[];
let alice: Signed;
const USER_A = 'carol@a.example';
const USER_B = 'dave@b.example';
const IP_B = '198.51.100.9';
const eventsA = [failedSignIn(USER_A), failedSignIn(USER_A), failedSignIn(USER_A)];
const eventsB = [failedSignIn(USER_B, { ip: IP_B }), failedSignIn(USER_B, { ip: IP_B })];

beforeAll(async () => {
  w = await startConsoleWorld({ signInAttemptsPerMinute: 30 });
  alertsA = await deliverAndAlert(w, ORG_A, eventsA);
  alertsB = await deliverAndAlert(w, ORG_B, eventsB);
  alice = await signIn(w, USERS.alice);
}, 180_000);

afterAll(async () => {
  await w?.stop();
});

const get = (path: string, auth: Signed | string | null) =>
  fetch(`${w.url}${path}`, {
    redirect: 'manual',
    headers:
      auth === null ? {} : typeof auth === 'string' ? { authorization: `Bearer ${auth}` } : { cookie: auth.cookie },
  });

const range = () => {
  const until = new Date(Date.now() + 3600_000).toISOString();
  const since = new Date(Date.now() - 86_400_000).toISOString();
  return { since, until };
};

describe('sign-in', () => {
  it('signs in through the identity service and keeps the session in an HttpOnly, Secure, SameSite cookie', async () => {
    const start = await fetch(`${w.url}/console/auth/login`, { redirect: 'manual' });
    const authorize = new URL(start.headers.get('location')!);
    expect(authorize.origin).toBe(w.sim.url);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(start.headers.getSetCookie()[0]).toMatch(
      /^hooklog_login=.+; Path=\/console\/auth; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/,
    );

    const me = (await (await get('/console/api/me', alice)).json()) as Record<string, string>;
    expect(me).toMatchObject({ name: USERS.alice.login, role: 'analyst', orgs: [ORG_A], kind: 'user' });
    expect(me.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(alice.cookie).toMatch(/^hooklog_session=/);
    expect(w.oidc.issued.at(-1)).toMatchObject({ aud: 'hooklog-console', groups: ['sec-a'] });
    expect(w.sim.violations).toEqual([]);
  });

  it('refuses a user whose groups grant nothing, and a callback without its sign-in state', async () => {
    w.oidc.addUser({ login: 'mallory@x.example', password: 'm-pw', groups: ['everyone'] });
    await expect(signIn(w, { login: 'mallory@x.example', password: 'm-pw', groups: [] })).rejects.toThrow(
      /callback answered 403/,
    );
    const forged = await get('/console/auth/callback?code=abc&state=def', null);
    expect(forged.status).toBe(400);
    expect(forged.headers.getSetCookie().join()).not.toContain('hooklog_session=ey');
  });

  it('sends pages without a session to sign-in, coming back to the same URL', async () => {
    const res = await get(`/console/users/${ORG_A}/${encodeURIComponent(USER_A)}?since=2026-01-01T00:00:00Z`, null);
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get('location')!, w.url);
    expect(back.pathname).toBe('/console/auth/login');
    expect(back.searchParams.get('return_to')).toBe(
      `/console/users/${ORG_A}/${encodeURIComponent(USER_A)}?since=2026-01-01T00:00:00Z`,
    );
    expect((await get('/console/api/alerts', null)).status).toBe(401);
  });

  it('ends a session at its expiry, and refuses a cookie it did not sign', async () => {
    const key = new TextEncoder().encode(SESSION_SECRET);
    const sign = (expOffsetS: number, secret = key) =>
      new SignJWT({ name: 'alice', orgs: [ORG_A], role: 'analyst', sid: 'x' })
        .setProtectedHeader({ alg: 'HS256', typ: 'hooklog-session+jwt' })
        .setSubject('00ualice')
        // Granted a minute ago: within console.regrant_minutes, so taken as it is (no refresh token to re-check with).
        .setIssuedAt(Math.floor(Date.now() / 1000) - 60)
        .setExpirationTime(Math.floor(Date.now() / 1000) + expOffsetS)
        .sign(secret);
    const valid = { cookie: `hooklog_session=${await sign(600)}`, csrf: '' };
    expect((await get('/console/api/me', valid)).status).toBe(200);
    const expired = { cookie: `hooklog_session=${await sign(-1)}`, csrf: '' };
    expect((await get('/console/api/me', expired)).status).toBe(401);
    expect((await get('/console/alerts', expired)).status).toBe(302);
    const forged = { cookie: `hooklog_session=${await sign(600, new TextEncoder().encode('x'.repeat(40)))}`, csrf: '' };
    expect((await get('/console/api/me', forged)).status).toBe(401);
  });
});

describe('org isolation', () => {
  const q = (params: Record<string, string>) => `?${new URLSearchParams(params)}`;
  /** Every route, as [path for org A, the same for org B]. */
  const routes = () => {
    const r = range();
    const qp = { ...r, min_failures: '1' };
    const rule = { name: 'acme.isolation', filter: 'eventType eq "user.session.start"' };
    return [
      [`/console/alerts${q({ org: ORG_A })}`, `/console/alerts${q({ org: ORG_B })}`],
      [`/console/alerts/${alertsA[0]}`, `/console/alerts/${alertsB[0]}`],
      [
        `/console/users/${ORG_A}/${encodeURIComponent(USER_A)}`,
        `/console/users/${ORG_B}/${encodeURIComponent(USER_B)}`,
      ],
      [`/console/ips/203.0.113.7${q({ org: ORG_A })}`, `/console/ips/${IP_B}${q({ org: ORG_B })}`],
      [`/console/events${q({ org: ORG_A, ...r })}`, `/console/events${q({ org: ORG_B, ...r })}`],
      [
        `/console/queries/signin_failures_by_user${q({ org: ORG_A, ...qp })}`,
        `/console/queries/signin_failures_by_user${q({ org: ORG_B, ...qp })}`,
      ],
      [`/console/coverage${q({ org: ORG_A })}`, `/console/coverage${q({ org: ORG_B })}`],
      [`/console/api/alerts${q({ org: ORG_A })}`, `/console/api/alerts${q({ org: ORG_B })}`],
      [`/console/api/alerts/${alertsA[0]}`, `/console/api/alerts/${alertsB[0]}`],
      [
        `/console/api/users/${ORG_A}/${encodeURIComponent(USER_A)}`,
        `/console/api/users/${ORG_B}/${encodeURIComponent(USER_B)}`,
      ],
      [`/console/api/ips/203.0.113.7${q({ org: ORG_A })}`, `/console/api/ips/${IP_B}${q({ org: ORG_B })}`],
      [`/console/api/events${q({ org: ORG_A, ...r })}`, `/console/api/events${q({ org: ORG_B, ...r })}`],
      [
        `/console/api/queries/signin_failures_by_user${q({ org: ORG_A, ...qp })}`,
        `/console/api/queries/signin_failures_by_user${q({ org: ORG_B, ...qp })}`,
      ],
      [
        `/console/api/queries/signin_failures_by_user/csv${q({ org: ORG_A, ...qp })}`,
        `/console/api/queries/signin_failures_by_user/csv${q({ org: ORG_B, ...qp })}`,
      ],
      [`/console/api/coverage${q({ org: ORG_A })}`, `/console/api/coverage${q({ org: ORG_B })}`],
      [`/console/api/saved-searches${q({ org: ORG_A })}`, `/console/api/saved-searches${q({ org: ORG_B })}`],
      [
        `/console/api/search/rule${q({ ...rule, org: ORG_A, alert: eventsA[0]!.uuid })}`,
        `/console/api/search/rule${q({ ...rule, org: ORG_B, alert: eventsB[0]!.uuid })}`,
      ],
    ] as const;
  };

  it('answers 404 for every page, API route and export of another org, to a user and to a scoped key', async () => {
    for (const who of [alice, KEY_A]) {
      // Pages are for browsers (a key is sent to sign-in); the API and exports take keys.
      for (const [mine, theirs] of routes().filter(([p]) => who === alice || p.startsWith('/console/api/'))) {
        const ok = await get(mine, who);
        expect(ok.status, `${mine} (${typeof who === 'string' ? 'key' : 'alice'})`).toBe(200);
        const refused = await get(theirs, who);
        expect(refused.status, `${theirs} (${typeof who === 'string' ? 'key' : 'alice'})`).toBe(404);
        expect(await refused.text()).not.toContain(USER_B);
      }
    }
    // The bare key (all orgs, as before scoping) sees both.
    for (const [, theirs] of routes().filter(([p]) => p.startsWith('/console/api/')))
      expect((await get(theirs, KEY_ALL)).status, theirs).toBe(200);
  });

  it('leaves other orgs out of lists that name no org, and out of the query API', async () => {
    const list = (await (await get('/console/api/alerts', alice)).json()) as {
      alerts: Array<{ alert_id: string; org: string }>;
    };
    expect(list.alerts.map((a) => a.alert_id).sort()).toEqual([...alertsA].sort());
    const ip = (await (await get(`/console/api/ips/${IP_B}`, alice)).json()) as { org: Array<{ value: string }> };
    expect(ip.org).toEqual([]);
    const status = (await (await get('/console/api/status', alice)).json()) as { status: Array<{ org: string }> };
    expect(status.status.map((s) => s.org)).toEqual([ORG_A]);
    const r = range();
    expect((await get(`/api/queries/signin_failures_by_user${q({ org: ORG_B, ...r })}`, KEY_A)).status).toBe(404);
    expect((await get(`/api/queries/signin_failures_by_user${q({ org: ORG_A, ...r })}`, KEY_A)).status).toBe(200);
    // A parameter naming the org twice is refused rather than read one way here and another there.
    expect((await get(`/console/api/queries/signin_failures_by_user?org=${ORG_A}&org=${ORG_B}`, alice)).status).toBe(
      400,
    );
  });

  it("refuses a change to another org's alert with 404, and records nothing", async () => {
    const res = await postChange(w, alice, { alert_ids: [alertsB[0], alertsA[0]], action: 'acknowledge' });
    expect(res.status).toBe(404);
    const key = await fetch(`${w.url}/console/api/alerts/changes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
      body: JSON.stringify({ alert_ids: [alertsB[1]], action: 'acknowledge' }),
    });
    expect(key.status).toBe(404);
    const store = w.hooklog.store!;
    const rows = await store.query(
      `SELECT * FROM ${store.database}.alert_states WHERE alert_id IN {ids:Array(String)}`,
      {
        ids: [alertsB[0]!, alertsB[1]!, alertsA[0]!],
      },
    );
    expect(rows).toEqual([]);
  });
});

describe('changes', () => {
  it("refuses a change without the session's CSRF token, with another session's, or from another origin", async () => {
    const bob = await signIn(w, USERS.bob);
    const id = alertsA[2]!;
    const body = { alert_ids: [id], action: 'acknowledge' };
    expect((await postChange(w, { ...alice, csrf: '' }, body)).status).toBe(403);
    expect((await postChange(w, { ...alice, csrf: 'A'.repeat(43) }, body)).status).toBe(403);
    expect((await postChange(w, { ...alice, csrf: bob.csrf }, body)).status).toBe(403);
    expect((await postChange(w, alice, body, { origin: 'https://evil.example' })).status).toBe(403);
    const logout = await fetch(`${w.url}/console/auth/logout`, { method: 'POST', headers: { cookie: alice.cookie } });
    expect(logout.status).toBe(403);
    const store = w.hooklog.store!;
    expect(
      await store.query(`SELECT * FROM ${store.database}.alert_states WHERE alert_id = {id:String}`, { id }),
    ).toEqual([]);
  });

  it('acknowledges then closes an alert as a false positive; the state is the fold and the history the audit', async () => {
    const id = alertsA[0]!;
    const ack = await postChange(w, alice, { alert_ids: [id], action: 'acknowledge' });
    expect(ack.status).toBe(200);
    const close = await postChange(w, alice, {
      alert_ids: [id],
      action: 'close',
      resolution: 'false_positive',
      note: 'test user',
    });
    expect(await close.json()).toMatchObject({ changed: 1, visible: true });
    const detail = (await (await get(`/console/api/alerts/${id}`, alice)).json()) as {
      alert: unknown;
      history: Array<Record<string, string>>;
      events: unknown[];
    };
    expect(detail.alert).toMatchObject({
      status: 'closed',
      resolution: 'false_positive',
      rule_id: RULE_ID,
      org: ORG_A,
    });
    expect(detail.history.map((h) => [h.action, h.status, h.actor_name, h.note])).toEqual([
      ['acknowledge', 'acknowledged', USERS.alice.login, ''],
      ['close', 'closed', USERS.alice.login, 'test user'],
    ]);
    expect(detail.events).toHaveLength(1);
    // The lifecycle holds: a closed alert cannot be acknowledged.
    expect((await postChange(w, alice, { alert_ids: [id], action: 'acknowledge' })).status).toBe(409);
    const closed = (await (await get(`/console/api/alerts?status=closed`, alice)).json()) as {
      alerts: Array<{ alert_id: string }>;
    };
    expect(closed.alerts.map((a) => a.alert_id)).toEqual([id]);
  });

  it('changes many alerts at once, assigns them, and refuses a viewer', async () => {
    const vera = await signIn(w, USERS.vera);
    const ids = [alertsA[1]!, alertsA[2]!];
    expect((await postChange(w, vera, { alert_ids: ids, action: 'acknowledge' })).status).toBe(403);
    expect((await postChange(w, alice, { alert_ids: ids, action: 'assign', assignee: 'alice' })).status).toBe(200);
    const mine = (await (await get(`/console/api/alerts?assignee=alice`, vera)).json()) as {
      alerts: Array<{ alert_id: string; status: string }>;
    };
    expect(mine.alerts.map((a) => a.alert_id).sort()).toEqual([...ids].sort());
    expect(mine.alerts.every((a) => a.status === 'open')).toBe(true);
  });
});

describe('entities', () => {
  it("shows a user's risk changes from the risk_changes table (migration 020), the org's only", async () => {
    const path = `/console/api/users/${ORG_A}/${encodeURIComponent(USER_A)}`;
    const before = (await (await get(path, alice)).json()) as { risk: unknown; signIns: unknown[]; ip: unknown[] };
    expect(before.risk).toEqual([]);
    expect(before.ip).toEqual([{ value: '203.0.113.7', n: '3', failed: '3', last: expect.any(String) }]);
    const store = w.hooklog.store!;
    // Rows as the sink writes them from <prefix>.risk-changes (consumers/alerting/risk/rows.ts).
    await store.insertJson('risk_changes', [
      {
        at: '2026-01-05 00:00:00.000',
        org: ORG_A,
        entity_id: '00u1',
        entity_login: USER_A,
        previous: 'none',
        current: 'high',
        cause: 'finding',
        rule_id: RULE_ID,
        alert_id: alertsA[0],
        reason: 'failed sign-ins',
        change_id: 'c',
      },
      {
        at: '2026-01-05 00:00:00.000',
        org: ORG_B,
        entity_id: '00u1',
        entity_login: USER_A,
        previous: 'none',
        current: 'low',
        cause: 'finding',
        rule_id: RULE_ID,
        alert_id: 'x',
        reason: 'other org',
        change_id: 'd',
      },
    ]);
    const after = (await (await get(path, alice)).json()) as { risk: Array<Record<string, string>> };
    expect(after.risk.map((r) => [r.previous, r.current, r.reason])).toEqual([['none', 'high', 'failed sign-ins']]);
  });
});

describe('values too long for a URL', () => {
  it('finds a user, their events and alerts by the reference a page links them with', async () => {
    const login = `long-\u202E${'z'.repeat(5000)}@a.example`;
    await deliverAndAlert(w, ORG_A, [failedSignIn(login, { ip: '192.0.2.77' })]);
    const ref = linkValue(login);
    expect(ref).toBe(`sha256:${createHash('sha256').update(login, 'utf8').digest('hex')}`);
    const q = new URLSearchParams(range());

    const user = (await (await get(`/console/api/users/${ORG_A}/${encodeURIComponent(ref)}?${q}`, alice)).json()) as {
      user: string;
      alerts: unknown[];
      ip: Array<{ value: string }>;
    };
    expect(user.user).toBe(login);
    expect(user.alerts).toHaveLength(1);
    expect(user.ip.map((f) => f.value)).toEqual(['192.0.2.77']);

    q.set('org', ORG_A);
    q.set('user', ref);
    const events = (await (await get(`/console/api/events?${q}`, alice)).json()) as {
      events: Array<{ actor: string }>;
    };
    expect(events.events.map((e) => e.actor)).toEqual([login]);

    const ip = (await (
      await get(`/console/api/ips/${linkValue('192.0.2.77')}?${new URLSearchParams(range())}`, alice)
    ).json()) as {
      user: Array<{ value: string }>;
    };
    expect(ip.user.map((f) => f.value)).toEqual([login]);
    // Another org's session finds nothing by it.
    const bob = await signIn(w, USERS.bob);
    expect((await get(`/console/api/users/${ORG_A}/${encodeURIComponent(ref)}`, bob)).status).toBe(404);
  });
});

describe('headers', () => {
  it('serves every console response with a strict Content-Security-Policy and no caching of data', async () => {
    for (const path of ['/console/alerts', '/console/api/alerts', '/console/assets/app.js']) {
      const res = await get(path, alice);
      expect(res.status, path).toBe(200);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
    }
    expect((await get('/console/alerts', alice)).headers.get('cache-control')).toBe('no-store');
    const shell = await (await get('/console/alerts', alice)).text();
    expect(shell).not.toMatch(/<script>|<style>|style=/);
  });
});

describe('sign-in attempts', () => {
  it('are limited per address: past the limit, 429 with Retry-After', async () => {
    let refused: Response | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const res = await fetch(`${w.url}/console/auth/login`, { redirect: 'manual' });
      if (res.status === 429) refused = res;
      else expect(res.status).toBe(302);
    }
    expect(refused?.status).toBe(429);
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0);
    // The callback counts too.
    expect((await get('/console/auth/callback?code=x&state=y', null)).status).toBe(429);
  });
});
