/**
 * The simulated org's hook management API keeps the seed's rules (seed 002
 * §2.3, §2.4, §3, §8): what it must refuse, it refuses with the service's
 * error body; the secret is write-only; a PUT is the whole object and a new
 * channel needs verifying again; only INACTIVE hooks are deleted. And
 * hooklog's `apply --prune` goes through those rules: deactivate, then delete.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { silentLogger } from '../../platform/log.js';
import { SECRET_ID_HEADER, secretId } from '../../receivers/registration/desired.js';
import { applyPlans, hooksByOrg, readOrg } from '../../receivers/registration/index.js';
import { freePort } from '../e2e/hook-registration.js';
import { HookManagementApi, SimulatedOrg } from './index.js';

const SECRET = 'a-hook-secret-0123456789';
const channel = (uri: string, secret: string | null = SECRET) => ({
  type: 'HTTP',
  version: '1.0.0',
  config: {
    uri,
    headers: [],
    ...(secret ? { authScheme: { type: 'HEADER', key: 'authorization', value: secret } } : {}),
  },
});

let sim: SimulatedOrg | undefined;
afterEach(async () => sim?.stop());

async function start() {
  sim = await SimulatedOrg.start({});
  const api = new HookManagementApi(sim);
  sim.use(api);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${sim!.url}${path}`, {
      method,
      headers: { authorization: 'SSWS sim-token', 'content-type': 'application/json', accept: 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
  };
  return { api, call };
}

describe('simulated org: hook management API', () => {
  it('creates event hooks ACTIVE and UNVERIFIED, never returns the secret, and wants it again on every PUT', async () => {
    const { call } = await start();
    const created = await call('POST', '/api/v1/eventHooks', {
      name: 'h',
      events: { type: 'EVENT_TYPE', items: ['user.session.start'] },
      channel: channel('https://a.example.com/x'),
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ status: 'ACTIVE', verificationStatus: 'UNVERIFIED' });
    expect(JSON.stringify(created.body)).not.toContain(SECRET);
    const id = String(created.body.id);
    const got = await call('GET', `/api/v1/eventHooks/${id}`);
    expect((got.body.channel as { config: { authScheme: unknown } }).config.authScheme).toEqual({
      type: 'HEADER',
      key: 'authorization',
    });
    // GET, edit, PUT back: the secret is not in what GET gave, so the PUT is refused rather than clearing it.
    const put = await call('PUT', `/api/v1/eventHooks/${id}`, { ...got.body, name: 'renamed' });
    expect(put.status).toBe(400);
    expect(put.body).toMatchObject({ errorCode: 'E0000001', errorLink: 'E0000001' });
    expect(put.body.errorId).toEqual(expect.any(String));
    expect(put.body.errorCauses).toEqual([{ errorSummary: expect.stringContaining('authScheme.value: is required') }]);
    const bad = await call('POST', '/api/v1/eventHooks', {
      name: 'h',
      events: { type: 'EVENT_TYPE', items: [] },
      channel: channel('http://a.example.com'),
    });
    expect(bad.body.errorSummary).toBe('Api validation failed: channel.config.uri, events');
  });

  it('deletes only INACTIVE hooks; a missing one is 404 E0000007', async () => {
    const { call } = await start();
    const made = await call('POST', '/api/v1/inlineHooks', {
      name: 'i',
      type: 'com.okta.oauth2.tokens.transform',
      version: '1.0.0',
      channel: channel('https://a.example.com/t'),
    });
    const id = String(made.body.id);
    const refused = await call('DELETE', `/api/v1/inlineHooks/${id}`);
    expect(refused.status).toBe(400);
    expect(refused.body.errorCauses).toEqual([
      { errorSummary: 'status: The inline hook must be INACTIVE before it can be deleted.' },
    ]);
    expect((await call('POST', `/api/v1/inlineHooks/${id}/lifecycle/deactivate`)).body.status).toBe('INACTIVE');
    expect((await call('DELETE', `/api/v1/inlineHooks/${id}`)).status).toBe(204);
    expect(await call('GET', `/api/v1/inlineHooks/${id}`)).toMatchObject({
      status: 404,
      body: { errorCode: 'E0000007' },
    });
  });

  it("hooklog's apply --prune removes its own unconfigured hooks by the rules (deactivate, delete) and leaves others", async () => {
    const { api, call } = await start();
    // hooklog's own (registered with its secret-id header), someone else's, and someone else's named like hooklog's.
    for (const [name, own] of [
      ['hooklog:retired', true],
      ['not hooklog', false],
      ['hooklog:lookalike', false],
    ] as const) {
      const ch = channel('https://a.example.com/t');
      await call('POST', '/api/v1/inlineHooks', {
        name,
        type: 'com.okta.oauth2.tokens.transform',
        version: '1.0.0',
        channel: own
          ? { ...ch, config: { ...ch.config, headers: [{ key: SECRET_ID_HEADER, value: secretId(SECRET) }] } }
          : ch,
      });
    }
    const config = parseConfig(
      {
        // A local port where nothing listens: the verification fails without leaving the machine.
        hook_registration: { public_url: `https://127.0.0.1:${await freePort()}` },
        orgs: [{ id: 'acme', base_url: sim!.url, auth: { ssws: { token: 'sim-token' } } }],
        event_hooks: [
          { id: 'main', org: 'acme', auth: { secrets: [SECRET] }, register: { event_types: ['user.session.start'] } },
        ],
      },
      {},
    );
    const desired = hooksByOrg(config).get('acme');
    const state = await readOrg(config, config.orgs[0]!, desired!, {
      access: 'manage',
      prune: true,
      logger: silentLogger(),
    });
    const outcomes = await applyPlans(state.service!, state.plans);
    expect(outcomes.map((o) => [o.plan.id, o.done.map((d) => d.step), o.error])).toEqual([
      ['hooklog:retired', ['deactivate', 'delete'], null],
      ['hooklog:lookalike', [], null],
      // Created; its verification fails (nothing listens there): a line, not a throw.
      ['main', ['create'], expect.stringContaining('event hook "main" (org acme): verify failed: HTTP 400')],
    ]);
    expect(api.hooks.all('inline').map((h) => h.name)).toEqual(['not hooklog', 'hooklog:lookalike']);
    expect(sim!.violations).toEqual([]);
  });
});
