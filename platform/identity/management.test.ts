/**
 * The management API as its users get it (`openManagement`), against the
 * simulated org with a module of the test's own: an OAuth token asking for the
 * caller's scopes, a 403 naming the scope a token lacks, and each endpoint
 * family spending its own bucket within the configured share.
 */
import { generateKeyPairSync } from 'node:crypto';
import { exportJWK, type JWK } from 'jose';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { capturingLogger, orgConfig } from '../../test/simulated-org/harness.js';
import { SimulatedOrg, type SimApi } from '../../test/simulated-org/index.js';
import { renderMetrics } from '../metrics.js';
import { total } from '../../test/support/metrics.js';
import { IdpReplyError } from './errors.js';
import { openManagement } from './management.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
let jwks: JWK[];
beforeAll(async () => {
  jwks = [{ ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1' }];
});

/** GET /api/v1/things (scope things.read) and GET /api/v1/others (scope others.read), each its own family. */
const things: SimApi = {
  name: 'things',
  async handle(req, org) {
    const family =
      req.url.pathname === '/api/v1/things' ? 'things' : req.url.pathname === '/api/v1/others' ? 'others' : null;
    if (!family) return null;
    const limit = org.admit(family);
    if (limit.refused) return limit.refused;
    const denied = await org.authorize(req, `${family}.read`);
    if (denied) return { ...denied, headers: limit.headers };
    return { status: 200, body: [{ family }], headers: limit.headers };
  },
};

describe('openManagement', () => {
  let sim: SimulatedOrg | undefined;
  afterEach(async () => {
    await sim?.stop();
    sim = undefined;
  });

  it("asks for the caller's scopes, and a 403 names what the token lacks", async () => {
    sim = (
      await SimulatedOrg.start({
        auth: { clients: [{ clientId: 'app', jwks, scopes: ['things.read'] }] },
      })
    ).use(things);
    const pem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const org = orgConfig(sim, { auth: { oauth: { client_id: 'app', private_key: pem, key_id: 'rsa-1' } } });
    const m = await openManagement({ org, scopes: ['things.read'], logger: capturingLogger().logger });
    const ok = await m.client.send({ method: 'GET', path: '/api/v1/things', budget: m.budget('users') });
    expect(ok.body).toEqual([{ family: 'things' }]);
    const err = await m.client
      .send({ method: 'GET', path: '/api/v1/others', budget: m.budget('groups'), needs: 'the others.read scope' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdpReplyError);
    expect((err as IdpReplyError).status).toBe(403);
    expect((err as IdpReplyError).message).toContain('needs the others.read scope');
    expect(sim.auth.stats.tokensIssued).toBe(1);
  });

  it("keeps each family within its share of that family's bucket, never its last request", async () => {
    const windowMs = 2_000;
    sim = (await SimulatedOrg.start({ rateLimit: { management: { limit: 10, windowMs } } })).use(things);
    const org = orgConfig(sim, { management: { rate_limit_share: 0.5 } });
    const m = await openManagement({ org, scopes: [], logger: capturingLogger().logger });
    const send = (path: string, family: 'users' | 'groups') =>
      m.client.send({ method: 'GET', path, budget: m.budget(family) });
    await Promise.all(Array.from({ length: 9 }, () => send('/api/v1/things', 'users')));
    // Share 0.5 of 10, less the one request a newcomer may send blind: at most 4 per window.
    const perWindow = new Map<number, number>();
    for (const r of sim.requests.filter((q) => q.path === '/api/v1/things'))
      perWindow.set(Math.floor(r.at / windowMs), (perWindow.get(Math.floor(r.at / windowMs)) ?? 0) + 1);
    expect(Math.max(...perWindow.values())).toBeLessThanOrEqual(4);
    expect(perWindow.size).toBeGreaterThanOrEqual(3);
    // The other family has its own bucket: the first one's spent window does not hold it back.
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 4 }, () => send('/api/v1/others', 'groups')));
    expect(Date.now() - t0).toBeLessThan(windowMs / 2);
    expect(sim.violations).toEqual([]);
    // The waits are counted by family (the first family waited out windows; the second never waited).
    const waited = (family: string) =>
      renderMetrics().then((r) =>
        total(r.body, 'hooklog_management_budget_wait_seconds_total', { org: org.id, family, why: 'share' }),
      );
    expect(await waited('users')).toBeGreaterThan(windowMs / 1000 / 2);
    expect(await waited('groups')).toBe(0);
  });
});
