/**
 * Sessions that end and refusals that leave a trace (issue 36), on hooklog as
 * `hooklog start` runs it (embedded stream and chdb) with the simulated org's
 * OIDC: a sign-out revokes the session on the server (the old cookie is
 * refused, its change not recorded); a grant changed or removed at the
 * identity service takes effect within `console.regrant_minutes` (short here),
 * through the refresh token; and each kind of refusal is logged once, with
 * who, the route and why, and counted in hooklog_console_refusals_total.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturingLogger } from '../test/simulated-org/harness.js';
import { total } from '../test/support/metrics.js';
import { waitFor } from '../test/support/wait.js';
import {
  deliverAndAlert,
  failedSignIn,
  KEY_A,
  KEY_ALL,
  ORG_A,
  ORG_B,
  postChange,
  signIn,
  startConsoleWorld,
  USERS,
  type ConsoleWorld,
  type Signed,
} from './testing.js';

/** 3 s: the groups are re-checked at least this often. */
const REGRANT_MINUTES = 0.05;
const REGRANT_MS = REGRANT_MINUTES * 60_000;

let w: ConsoleWorld;
const logs = capturingLogger();
let alertsA: string[];
let alertsB: string[];

beforeAll(async () => {
  w = await startConsoleWorld({ logger: logs.logger, regrantMinutes: REGRANT_MINUTES });
  alertsA = await deliverAndAlert(w, ORG_A, [failedSignIn('erin@a.example'), failedSignIn('erin@a.example')]);
  alertsB = await deliverAndAlert(w, ORG_B, [failedSignIn('fred@b.example')]);
}, 180_000);

afterAll(async () => {
  await w?.stop();
});

/** A browser's cookie jar for one session: a re-issued cookie (after a regrant) replaces the old one. */
class Jar {
  cookie: string;
  constructor(s: Signed) {
    this.cookie = s.cookie;
  }
  async get(path: string): Promise<Response> {
    const res = await fetch(`${w.url}${path}`, { headers: { cookie: this.cookie } });
    const set = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .find((c) => c.startsWith('hooklog_session=') && c !== 'hooklog_session=');
    if (set) this.cookie = set;
    return res;
  }
}

const get = (path: string, auth: Signed | string) =>
  fetch(`${w.url}${path}`, {
    headers: typeof auth === 'string' ? { authorization: `Bearer ${auth}` } : { cookie: auth.cookie },
  });

const metric = async (reason: string) =>
  total(await (await fetch(`${w.url}/metrics`)).text(), 'hooklog_console_refusals_total', { reason });

const WRONG_KEY = 'not-a-key-of-this-console-0123';

/** The refusal lines logged since `from` (an index into the captured lines). */
const refusalsSince = (from: number) =>
  logs
    .lines()
    .slice(from)
    .filter((l) => l.msg === 'console_refused');

const historyOf = async (id: string) =>
  ((await (await get(`/console/api/alerts/${id}`, KEY_ALL)).json()) as { history: unknown[] }).history;

describe('sign-out', () => {
  it('revokes the session on the server: the old cookie is refused and its change is not recorded', async () => {
    const alice = await signIn(w, USERS.alice);
    expect((await get('/console/api/me', alice)).status).toBe(200);
    const from = logs.lines().length;
    const counted = await metric('revoked_session');

    const out = await fetch(`${w.url}/console/auth/logout`, {
      method: 'POST',
      headers: { cookie: alice.cookie, 'x-csrf-token': alice.csrf, origin: w.url },
    });
    expect(out.status).toBe(204);

    // The cookie a copy (or an attacker) kept is worth nothing now.
    expect((await get('/console/api/me', alice)).status).toBe(401);
    const change = await postChange(w, alice, { alert_ids: [alertsA[0]], action: 'acknowledge' });
    expect(change.status).toBe(401);
    expect(await historyOf(alertsA[0]!)).toEqual([]);
    const page = await fetch(`${w.url}/console/alerts`, { redirect: 'manual', headers: { cookie: alice.cookie } });
    expect(page.status).toBe(302);

    const refused = refusalsSince(from);
    expect(refused.map((l) => [l.reason, l.route, l.why])).toEqual([
      ['revoked_session', '/console/api/me', 'signed_out'],
      ['revoked_session', '/console/api/alerts/changes', 'signed_out'],
      ['revoked_session', '/console/alerts', 'signed_out'],
    ]);
    expect(await metric('revoked_session')).toBe(counted + 3);
    // Signing in again is a new session.
    const again = await signIn(w, USERS.alice);
    expect((await get('/console/api/me', again)).status).toBe(200);
  });
});

describe('regrant', () => {
  it('follows a group change at the identity service within the regrant period, and ends access when the grant is removed', async () => {
    const gina = { login: 'gina@a.example', password: 'gina-pw', groups: ['sec-a'] };
    w.oidc.addUser(gina);
    const jar = new Jar(await signIn(w, gina));
    const me = async () => {
      const res = await jar.get('/console/api/me');
      return res.status === 200 ? ((await res.json()) as { role: string }).role : res.status;
    };
    expect(await me()).toBe('analyst');

    // Moved to a viewers' group: the next regrant (through the refresh token) makes the session a viewer's.
    const moved = Date.now();
    w.oidc.setGroups(gina.login, ['view-a']);
    await waitFor(me, { until: (r) => r === 'viewer', what: "gina's role after the move", timeoutMs: 3 * REGRANT_MS });
    expect(Date.now() - moved).toBeLessThan(REGRANT_MS + 1500);
    expect(w.oidc.issued.filter((i) => i.groups.includes('view-a') && i.grant === 'refresh_token')).not.toEqual([]);

    // Removed from every group of the console: access ends within the regrant period.
    const from = logs.lines().length;
    const counted = await metric('grant_removed');
    const kept = jar.cookie;
    const removed = Date.now();
    w.oidc.setGroups(gina.login, ['everyone']);
    await waitFor(me, {
      until: (r) => r === 401,
      what: "gina's access after the grant was removed",
      timeoutMs: 3 * REGRANT_MS,
    });
    expect(Date.now() - removed).toBeLessThan(REGRANT_MS + 1500);
    const ended = refusalsSince(from);
    expect(ended.map((l) => l.reason)).toEqual(['grant_removed']);
    expect(ended[0]).toMatchObject({ principal: { name: gina.login, kind: 'user' }, route: '/console/api/me' });
    expect(await metric('grant_removed')).toBe(counted + 1);
    // The session is revoked on the stream: the last cookie it had is refused as such, with no new regrant.
    const refreshes = w.oidc.issued.length;
    expect((await fetch(`${w.url}/console/api/me`, { headers: { cookie: kept } })).status).toBe(401);
    expect(w.oidc.issued.length).toBe(refreshes);
    expect(refusalsSince(from).map((l) => l.reason)).toEqual(['grant_removed', 'revoked_session']);
    // hooklog kept to the refresh grant's rules (scope, rotation) throughout.
    expect(w.sim.violations).toEqual([]);
  }, 60_000);
});

describe('regrant during an outage of the identity service', () => {
  it('answers 503 while the groups cannot be re-checked, ending nothing, and goes on once they can', async () => {
    const hank = { login: 'hank@a.example', password: 'hank-pw', groups: ['sec-a'] };
    w.oidc.addUser(hank);
    const jar = new Jar(await signIn(w, hank));
    expect((await jar.get('/console/api/me')).status).toBe(200);
    const from = logs.lines().length;
    w.oidc.tokenOutage = 503;
    try {
      // Nothing is granted on old groups once they are due for a re-check.
      await waitFor(async () => (await jar.get('/console/api/me')).status, {
        until: (st) => st === 503,
        what: "hank's answer once the re-check is due",
        timeoutMs: 3 * REGRANT_MS,
      });
    } finally {
      w.oidc.tokenOutage = undefined;
    }
    expect((await jar.get('/console/api/me')).status).toBe(200);
    expect(refusalsSince(from)).toEqual([]);
  }, 60_000);
});

describe('refusals', () => {
  it('logs each kind of refusal once, with the principal, route and reason, and counts it', async () => {
    const alice = await signIn(w, USERS.alice);
    const vera = await signIn(w, USERS.vera);
    const before = {
      other_org: await metric('other_org'),
      viewer_change: await metric('viewer_change'),
      csrf: await metric('csrf'),
      wrong_key: await metric('wrong_key'),
    };
    const from = logs.lines().length;

    // Another org's user page and alert, by a session; another org's user page by a scoped key.
    expect((await get(`/console/api/users/${ORG_B}/fred%40b.example`, alice)).status).toBe(404);
    expect((await get(`/console/api/alerts/${alertsB[0]}`, alice)).status).toBe(404);
    expect((await get(`/console/api/users/${ORG_B}/fred%40b.example`, KEY_A)).status).toBe(404);
    // Not a refusal: an alert that does not exist is simply not there.
    expect((await get('/console/api/alerts/no-such-alert', alice)).status).toBe(404);
    // A viewer's change; a change without its CSRF token; one from another origin.
    expect((await postChange(w, vera, { alert_ids: [alertsA[1]], action: 'acknowledge' })).status).toBe(403);
    expect(
      (await postChange(w, { ...alice, csrf: 'wrong' }, { alert_ids: [alertsA[1]], action: 'acknowledge' })).status,
    ).toBe(403);
    expect(
      (
        await postChange(
          w,
          alice,
          { alert_ids: [alertsA[1]], action: 'acknowledge' },
          { origin: 'https://evil.example' },
        )
      ).status,
    ).toBe(403);

    // A key that is not one (a guess, a revoked key): 401, and a trace with no principal and never the key.
    expect((await get('/console/api/me', WRONG_KEY)).status).toBe(401);

    const refused = refusalsSince(from);
    const nameOf = (l: Record<string, unknown>) => (l.principal as { name: string } | null)?.name ?? null;
    expect(refused.map((l) => [l.reason, l.route, nameOf(l), l.org ?? null])).toEqual([
      ['other_org', '/console/api/users/:org/:user', USERS.alice.login, ORG_B],
      ['other_org', '/console/api/alerts/:id', USERS.alice.login, ORG_B],
      ['other_org', '/console/api/users/:org/:user', 'org-a-tool', ORG_B],
      ['viewer_change', '/console/api/alerts/changes', USERS.vera.login, ORG_A],
      ['csrf', '/console/api/alerts/changes', USERS.alice.login, null],
      ['csrf', '/console/api/alerts/changes', USERS.alice.login, null],
      ['wrong_key', '/console/api/me', null, null],
    ]);
    expect(await metric('other_org')).toBe(before.other_org + 3);
    expect(await metric('viewer_change')).toBe(before.viewer_change + 1);
    expect(await metric('csrf')).toBe(before.csrf + 2);
    expect(await metric('wrong_key')).toBe(before.wrong_key + 1);
    // Never a secret: no cookie, CSRF token or key in any line logged.
    const text = JSON.stringify(logs.lines());
    for (const secret of [
      alice.cookie.split('=')[1]!,
      alice.csrf,
      vera.cookie.split('=')[1]!,
      KEY_A,
      KEY_ALL,
      WRONG_KEY,
    ])
      expect(text).not.toContain(secret);
    expect(await historyOf(alertsA[1]!)).toEqual([]);
  });
});
