/**
 * The simulated directory API is as strict as seed 000 makes the service: paging only by issued cursors with
 * Link self/next, limits 1–200, §4.2's filter grammar and timestamp form, no unknown parameters, scopes, 404
 * E0000007 for an unknown id, roles through groups listed as the user's (assignmentType GROUP).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findLink } from '../../platform/identity/link.js';
import { Directory, DirectoryApi, SimulatedOrg } from './index.js';

describe('simulated org: directory API', () => {
  let sim: SimulatedOrg;
  const dir = new Directory();
  beforeAll(async () => {
    sim = await SimulatedOrg.start({
      auth: { ssws: ['sim-token', 'logs-only'], sswsScopes: { 'logs-only': ['okta.logs.read'] } },
    });
    sim.use(new DirectoryApi(dir));
    dir.addGroup('00gops', 'Ops', { roles: ['ORG_ADMIN'] });
    for (let i = 0; i < 5; i++) dir.addUser(`00u${i}`, `u${i}@acme.test`);
    dir.addMember('00gops', '00u1');
    dir.assignUserRole('00u1', 'HELP_DESK_ADMIN');
  });
  afterAll(() => sim.stop());

  const get = async (path: string, token = 'sim-token') => {
    const res = await fetch(`${sim.url}${path}`, { headers: { authorization: `SSWS ${token}` } });
    return { status: res.status, link: res.headers.get('link'), body: (await res.json()) as unknown };
  };

  it('pages users by the next link it issued, with self and next', async () => {
    const first = await get('/api/v1/users?limit=2');
    expect(first.status).toBe(200);
    expect((first.body as Array<{ id: string }>).map((u) => u.id)).toEqual(['00u0', '00u1']);
    expect(findLink(first.link, 'self')).toBe(`${sim.url}/api/v1/users?limit=2`);
    const ids: string[] = [];
    let next: string | null = findLink(first.link, 'next');
    while (next) {
      const page = await get(new URL(next).pathname + new URL(next).search);
      ids.push(...(page.body as Array<{ id: string }>).map((u) => u.id));
      next = findLink(page.link, 'next');
    }
    expect(ids).toEqual(['00u2', '00u3', '00u4']);
    expect(sim.violations).toEqual([]);
  });

  it("filters by lastUpdated gt in the seed's timestamp form, and only so", async () => {
    const before = new Date(Date.now() - 1000).toISOString();
    dir.updateUser('00u3', { status: 'SUSPENDED' });
    const since = new Date(dir.users.get('00u3')!.lastUpdated - 1).toISOString();
    const changed = await get(`/api/v1/users?filter=${encodeURIComponent(`lastUpdated gt "${since}"`)}`);
    expect((changed.body as Array<{ id: string; status: string }>).map((u) => [u.id, u.status])).toEqual([
      ['00u3', 'SUSPENDED'],
    ]);
    const n = sim.violations.length;
    for (const bad of [
      `lastUpdated gt "${before.slice(0, 19)}Z"`, // no milliseconds
      'lastUpdated ge "2026-01-01T00:00:00.000Z"', // no such operator
      'published gt "2026-01-01T00:00:00.000Z"', // no such field
      'status eq "ACTIVE" and', // incomplete
    ]) {
      const r = await get(`/api/v1/users?filter=${encodeURIComponent(bad)}`);
      expect(r.status, bad).toBe(400);
      expect(r.body).toMatchObject({ errorCode: 'E0000001' });
    }
    expect(sim.violations.length).toBe(n + 4);
  });

  it('refuses unknown parameters, limits out of range, cursors it never issued and q with paging', async () => {
    const n = sim.violations.length;
    for (const q of ['limit=0', 'limit=201', 'limit=abc', 'expand=groups', 'after=forged', 'q=u&limit=2']) {
      const r = await get(`/api/v1/users?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body, q).toMatchObject({ errorCode: 'E0000001', errorCauses: [expect.any(Object)] });
    }
    expect((await get('/api/v1/users/00u1/roles?limit=5')).status).toBe(400);
    expect(sim.violations.length).toBe(n + 7);
  });

  it('lists roles held through a group as the user’s, and groups’ own roles and members', async () => {
    const roles = (await get('/api/v1/users/00u1/roles')).body as Array<{ type: string; assignmentType: string }>;
    expect(roles.map((r) => [r.type, r.assignmentType])).toEqual([
      ['HELP_DESK_ADMIN', 'USER'],
      ['ORG_ADMIN', 'GROUP'],
    ]);
    expect(((await get('/api/v1/groups/00gops/roles')).body as Array<{ type: string }>).map((r) => r.type)).toEqual([
      'ORG_ADMIN',
    ]);
    expect(((await get('/api/v1/groups/00gops/users')).body as Array<{ id: string }>).map((u) => u.id)).toEqual([
      '00u1',
    ]);
    expect(((await get('/api/v1/users/00u1/groups')).body as Array<{ id: string }>).map((g) => g.id)).toEqual([
      '00gops',
    ]);
  });

  it('answers 404 E0000007 for an unknown id and 403 E0000006 without the scope', async () => {
    const missing = await get('/api/v1/users/00unope/roles');
    expect(missing).toMatchObject({ status: 404, body: { errorCode: 'E0000007' } });
    const denied = await get('/api/v1/groups', 'logs-only');
    expect(denied).toMatchObject({ status: 403, body: { errorCode: 'E0000006' } });
  });
});
