/**
 * Saved searches as `hooklog start` serves them (embedded stream and chdb), signed in through the simulated
 * org's OIDC: each change (save, overwrite, rename, delete) is a record on `<prefix>.saved-searches`, keyed by
 * org and id (the latest per key is the search), written by the sink into `saved_searches`, the audit trail;
 * org B's saved searches never reach org A, by list (one org, every org, `*`), by id (a guessed one too) or by
 * any change; a viewer and a change without its CSRF token are refused; bad input is 400 naming the field.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { savedSearchesTopic } from './index.js';
import {
  KEY_A,
  KEY_ALL,
  ORG_A,
  ORG_B,
  signIn,
  startConsoleWorld,
  USERS,
  type ConsoleWorld,
  type Signed,
} from './testing.js';

let w: ConsoleWorld;
let alice: Signed;
let bob: Signed;
let vera: Signed;

beforeAll(async () => {
  w = await startConsoleWorld();
  [alice, bob, vera] = [await signIn(w, USERS.alice), await signIn(w, USERS.bob), await signIn(w, USERS.vera)];
}, 180_000);

afterAll(async () => {
  await w?.stop();
});

type Auth = Signed | string;
const headers = (auth: Auth): Record<string, string> =>
  typeof auth === 'string'
    ? { authorization: `Bearer ${auth}` }
    : { cookie: auth.cookie, 'x-csrf-token': auth.csrf, origin: w.url };
const call = async (method: string, path: string, auth: Auth, body?: unknown) => {
  const res = await fetch(`${w.url}${path}`, {
    method,
    headers: { ...headers(auth), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

interface Saved {
  id: string;
  org: string;
  name: string;
  filter: string;
  range: Record<string, string>;
  fields: string[];
  facets: string[];
  saved_by_name: string;
}
const list = async (auth: Auth, org?: string) => {
  const r = await call(
    'GET',
    `/console/api/saved-searches${org === undefined ? '' : `?org=${encodeURIComponent(org)}`}`,
    auth,
  );
  return { status: r.status, saved: (r.body.saved ?? []) as Saved[] };
};
const search = (org: string, name: string, over: object = {}) => ({
  org,
  name,
  filter: 'eventType eq "user.session.start"',
  range: { last: '7d' },
  fields: ['eventType', 'actor.alternateId'],
  facets: ['client.ipAddress'],
  ...over,
});

describe('saved searches', () => {
  it('saves, overwrites, renames and deletes through records, each change in the audit trail', async () => {
    const saved = await call('POST', '/console/api/saved-searches', alice, search(ORG_A, 'Failed sign-ins'));
    expect(saved.status).toBe(200);
    expect(saved.body.visible).toBe(true);
    const id = saved.body.id as string;
    const mine = await list(alice, ORG_A);
    expect(mine.saved).toMatchObject([
      {
        id,
        org: ORG_A,
        name: 'Failed sign-ins',
        filter: 'eventType eq "user.session.start"',
        range: { last: '7d' },
        fields: ['eventType', 'actor.alternateId'],
        facets: ['client.ipAddress'],
        saved_by_name: expect.stringContaining('alice') as unknown,
      },
    ]);

    // The same name again is refused, unless it overwrites: the same search, a new state.
    const again = await call('POST', '/console/api/saved-searches', alice, search(ORG_A, 'Failed sign-ins'));
    expect(again.status).toBe(409);
    expect(again.body.id).toBe(id);
    const absolute = { since: '2026-01-05T00:00:00.000Z', until: '2026-01-06T12:00:00.000Z' };
    const over = await call(
      'POST',
      '/console/api/saved-searches',
      alice,
      search(ORG_A, 'Failed sign-ins', { overwrite: true, filter: 'outcome.result eq "FAILURE"', range: absolute }),
    );
    expect(over.status).toBe(200);
    expect(over.body.id).toBe(id);
    const renamed = await call('POST', `/console/api/saved-searches/${id}`, alice, { name: 'Failures' });
    expect(renamed.status).toBe(200);
    const opened = await call('GET', `/console/api/saved-searches/${id}`, alice);
    expect(opened.status).toBe(200);
    expect(opened.body.saved).toMatchObject({
      name: 'Failures',
      filter: 'outcome.result eq "FAILURE"',
      range: absolute,
    });

    const deleted = await call('DELETE', `/console/api/saved-searches/${id}`, alice);
    expect(deleted.status).toBe(200);
    expect((await list(alice, ORG_A)).saved.map((s) => s.id)).not.toContain(id);
    expect((await call('GET', `/console/api/saved-searches/${id}`, alice)).status).toBe(404);

    // The audit trail: every change, who made it and when, in the table the sink writes from the topic.
    const trail = await w.hooklog.store!.query<{ action: string; name: string; actor: string; actor_kind: string }>(
      `SELECT action, name, actor, actor_kind FROM ${w.hooklog.store!.database}.saved_searches FINAL
       WHERE search_id = {id:String} ORDER BY at, change_id`,
      { id },
    );
    expect(trail.map((t) => [t.action, t.name])).toEqual([
      ['save', 'Failed sign-ins'],
      ['save', 'Failed sign-ins'],
      ['rename', 'Failures'],
      ['delete', 'Failures'],
    ]);
    expect(new Set(trail.map((t) => t.actor_kind))).toEqual(new Set(['user']));
    // The topic is keyed by org and id: its latest record for the key is the search as it stands (deleted).
    const prefix = w.hooklog.topics.logs.slice(0, -'.logs'.length);
    const latest = await w.hooklog.stream.readLatestByKey(savedSearchesTopic(prefix));
    const last = latest.get(`${ORG_A}/${id}`);
    expect(last && (JSON.parse(last.value.toString()) as { action: string }).action).toBe('delete');
  });

  it("keeps org B's saved searches from org A: list, *, open, rename, delete, and a guessed id", async () => {
    const b = await call('POST', '/console/api/saved-searches', bob, search(ORG_B, 'B only'));
    expect(b.status).toBe(200);
    const bId = b.body.id as string;
    const a = await call('POST', '/console/api/saved-searches', KEY_A, search(ORG_A, 'A by key'));
    expect(a.status).toBe(200);

    for (const who of [alice, KEY_A] as const) {
      const mine = await list(who);
      expect(mine.saved.map((s) => s.org)).not.toContain(ORG_B);
      expect(mine.saved.map((s) => s.id)).toContain(a.body.id);
      expect((await list(who, ORG_A)).saved.map((s) => s.id)).not.toContain(bId);
      // Another org, and every org, are 404 for a principal limited to org A.
      expect((await list(who, ORG_B)).status).toBe(404);
      expect((await list(who, '*')).status).toBe(404);
      expect((await call('GET', `/console/api/saved-searches/${bId}`, who)).status).toBe(404);
      expect((await call('POST', `/console/api/saved-searches/${bId}`, who, { name: 'taken' })).status).toBe(404);
      expect((await call('DELETE', `/console/api/saved-searches/${bId}`, who)).status).toBe(404);
      expect((await call('POST', '/console/api/saved-searches', who, search(ORG_B, 'planted'))).status).toBe(404);
      // A guessed id answers as another org's does.
      expect((await call('GET', `/console/api/saved-searches/${randomUUID()}`, who)).status).toBe(404);
      expect((await call('GET', '/console/api/saved-searches/not-an-id', who)).status).toBe(404);
    }
    // Org B's search is as bob saved it, with his one change.
    const still = await call('GET', `/console/api/saved-searches/${bId}`, bob);
    expect(still.body.saved).toMatchObject({ name: 'B only', org: ORG_B });
    expect(still.body.history).toHaveLength(1);
    expect((await list(bob, ORG_B)).saved.map((s) => s.name)).toEqual(['B only']);
    // `*` is for who sees every org.
    const every = await list(KEY_ALL, '*');
    expect(every.status).toBe(200);
    expect(new Set(every.saved.map((s) => s.org))).toEqual(new Set([ORG_A, ORG_B]));
  });

  it('refuses a viewer, a change without its CSRF token, and input that is not a search', async () => {
    const viewer = await call('POST', '/console/api/saved-searches', vera, search(ORG_A, 'viewer'));
    expect(viewer.status).toBe(403);
    const noCsrf = await fetch(`${w.url}/console/api/saved-searches`, {
      method: 'POST',
      headers: { cookie: alice.cookie, 'content-type': 'application/json', origin: w.url },
      body: JSON.stringify(search(ORG_A, 'no csrf')),
    });
    expect(noCsrf.status).toBe(403);
    const bad = async (over: object) =>
      (await call('POST', '/console/api/saved-searches', alice, search(ORG_A, 'x', over))).body;
    expect(await bad({ name: '  ' })).toMatchObject({ error: expect.stringContaining('name') as unknown });
    expect(await bad({ name: 'x'.repeat(20_000) })).toMatchObject({
      error: expect.stringContaining('name') as unknown,
    });
    expect(await bad({ range: { last: '401d' } })).toMatchObject({
      error: expect.stringContaining('range') as unknown,
    });
    expect(await bad({ range: { since: '2026-01-06T00:00:00Z', until: '2026-01-05T00:00:00Z' } })).toMatchObject({
      error: expect.stringContaining('range') as unknown,
    });
    expect(await bad({ fields: Array.from({ length: 21 }, (_, i) => `f${i}`) })).toMatchObject({
      error: expect.stringContaining('fields') as unknown,
    });
    expect(await bad({ extra: 1 })).toMatchObject({ error: expect.stringContaining('extra') as unknown });
    expect((await list(alice, ORG_A)).saved.map((s) => s.name)).not.toContain('x');
  });
});
