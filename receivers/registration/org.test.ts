/**
 * Registration against the simulated org over real HTTP (its hook API as
 * strict as the seed's contract): what `hooks apply` leaves behind is what the
 * next plan calls in sync, whatever way the config writes `public_url`; a
 * hook whose `register:` is removed is still shown, by `plan` and `status`,
 * and `apply --prune` removes it even when it was the last one registered.
 */
import { generateKeyPairSync } from 'node:crypto';
import { exportJWK } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { silentLogger } from '../../platform/log.js';
import { HookManagementApi, SimulatedOrg } from '../../test/simulated-org/index.js';
import { runCli } from '../../test/support/cli.js';
import { writeTestConfig } from '../../test/support/hooklog-config.js';
import { applyPlans, hookOrgs, hooksByOrg, readOrg } from './index.js';

const SECRET = 'token-hook-secret-0123456789';

let sim: SimulatedOrg | undefined;
afterEach(async () => sim?.stop());

async function org(opts: Parameters<typeof SimulatedOrg.start>[0] = {}) {
  sim = await SimulatedOrg.start(opts);
  const api = new HookManagementApi(sim);
  sim.use(api);
  return { sim, api };
}

/** A config registering one token hook (never verified, so no endpoint is needed) at `publicUrl`. */
function tokenHookConfig(publicUrl: string) {
  return parseConfig(
    {
      hook_registration: { public_url: publicUrl },
      orgs: [
        { id: 'acme', base_url: sim!.url, auth: { ssws: { token: 'sim-token' } }, system_log: { enabled: false } },
      ],
      token_hooks: [{ id: 'tokens', org: 'acme', auth: { type: 'header', secrets: [SECRET] }, register: {} }],
    },
    {},
  );
}

/** `hooks apply` in-process: each hook's steps done, and the problems. */
async function apply(config: ReturnType<typeof tokenHookConfig>) {
  const out: Array<{ id: string; steps: string[]; error: string | null }> = [];
  for (const [id, desired] of hooksByOrg(config)) {
    const state = await readOrg(
      config,
      config.orgs.find((o) => o.id === id)!,
      desired,
      {
        access: 'manage',
        prune: false,
        logger: silentLogger(),
      },
    );
    expect(state.errors).toEqual([]);
    for (const o of await applyPlans(state.service!, state.plans))
      out.push({ id: o.plan.id, steps: o.done.map((d) => d.step), error: o.error });
  }
  return out;
}

describe('hooks apply against the simulated org', () => {
  it.each(['HTTPS://127.0.0.1:443', 'https://127.0.0.1:443/', 'https://127.0.0.1/x/../'])(
    'settles with public_url %s: the second apply changes nothing (URIs compared as the service stores them)',
    async (publicUrl) => {
      const { api } = await org();
      const config = tokenHookConfig(publicUrl);
      expect(await apply(config)).toEqual([{ id: 'tokens', steps: ['create'], error: null }]);
      expect(api.named('inline', 'hooklog:tokens')[0]!.channel.config.uri).toBe('https://127.0.0.1/hooks/token/tokens');
      const before = sim!.requests.length;
      expect(await apply(config)).toEqual([{ id: 'tokens', steps: [], error: null }]);
      expect(sim!.requests.slice(before).map((r) => r.method)).toEqual(['GET']);
      expect(sim!.violations).toEqual([]);
    },
  );
});

const PUBLIC_URL = 'https://127.0.0.1:8443';

/** The CLI's config once the token hook's `register:` is removed (`tokenHook: false`: the hook itself too). */
function cliConfig(o: { eventHook: boolean; tokenHook?: boolean; token?: string }) {
  return writeTestConfig({
    extra: {
      hook_registration: { public_url: PUBLIC_URL },
      orgs: [
        {
          id: 'acme',
          base_url: sim!.url,
          auth: { ssws: { token: o.token ?? 'sim-token' } },
          system_log: { enabled: false },
        },
      ],
      event_hooks: o.eventHook
        ? [{ id: 'main', org: 'acme', auth: { secrets: [SECRET] }, register: { event_types: ['user.session.start'] } }]
        : [],
      token_hooks:
        o.tokenHook === false ? [] : [{ id: 'tokens', org: 'acme', auth: { type: 'header', secrets: [SECRET] } }],
    },
  }).configPath;
}

/** The token hook registered by an earlier apply (with its `register:`): its id at the service. */
async function registeredTokenHook(api: HookManagementApi): Promise<string> {
  expect(await apply(tokenHookConfig(PUBLIC_URL))).toEqual([{ id: 'tokens', steps: ['create'], error: null }]);
  return api.named('inline', 'hooklog:tokens')[0]!.id;
}

describe("hooklog's own hooks once their register: is removed", () => {
  it('plan and status show the token hook, as one --prune would delete; nothing is changed', async () => {
    const { api } = await org();
    const id = await registeredTokenHook(api);
    const configPath = cliConfig({ eventHook: true });
    const before = sim!.requests.length;
    const plan = await runCli(['hooks', 'plan', '--config', configPath]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toBe(
      `? token hook "hooklog:tokens" (org acme, ${id}): not in the config; \`hooklog hooks apply --prune\` deactivates and deletes it\n` +
        `+ event hook "main" (org acme): create, verify "hooklog:main" -> ${PUBLIC_URL}/hooks/events/main [user.session.start]\n` +
        'Plan: 1 to create, 0 to change, 0 to delete (1 more with --prune), 0 in sync, 0 refused.\n',
    );
    const status = await runCli(['hooks', 'status', '--format', 'json', '--config', configPath]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual([
      expect.objectContaining({
        kind: 'token',
        hook: 'hooklog:tokens',
        id,
        status: 'ACTIVE',
        drift: 'not in the config (hooks apply --prune deletes it)',
      }),
      expect.objectContaining({ kind: 'event', hook: 'main', id: '-', drift: 'not registered' }),
    ]);
    expect(sim!.requests.slice(before).filter((r) => r.method !== 'GET')).toEqual([]);
    expect(sim!.violations).toEqual([]);
  }, 60_000);

  it('credentials that cannot read that kind: plan still plans, with a note saying what it could not show', async () => {
    const { api } = await org({
      auth: { ssws: ['sim-token', 'events-only'], sswsScopes: { 'events-only': ['okta.eventHooks.read'] } },
    });
    await registeredTokenHook(api);
    const plan = await runCli(['hooks', 'plan', '--config', cliConfig({ eventHook: true, token: 'events-only' })]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('Plan: 1 to create, 0 to change, 0 to delete, 0 in sync, 0 refused.');
    expect(plan.stderr).toMatch(
      /^note: org acme: inline hooks not listed \(HTTP 403: E0000006: [^\n]*\): hooklog's own hooks of that kind no longer configured are not shown\n$/,
    );
  }, 60_000);

  it('apply --prune removes the last registered hook: nothing registered is no reason to refuse it', async () => {
    const { api } = await org();
    const id = await registeredTokenHook(api);
    const other = api.hooks.create('inline', {
      name: 'not hooklog',
      type: 'com.okta.import.transform',
      version: '1.0.0',
      channel: { type: 'HTTP', version: '1.0.0', config: { uri: 'https://elsewhere.example.com/x' } },
    });
    expect('kind' in other).toBe(true);
    const configPath = cliConfig({ eventHook: false });
    // Without --prune: shown, left alone.
    const kept = await runCli(['hooks', 'apply', '--config', configPath]);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toBe(
      `? token hook "hooklog:tokens" (org acme, ${id}): not in the config; \`hooklog hooks apply --prune\` deactivates and deletes it\n` +
        'Apply: 0 created, 0 updated, 0 verified, 0 activated, 0 deactivated, 0 deleted; 0 failed.\n',
    );
    const pruned = await runCli(['hooks', 'apply', '--prune', '--config', configPath]);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toBe(
      `token hook "hooklog:tokens" (org acme, ${id}): deactivated, deleted\n` +
        'Apply: 0 created, 0 updated, 0 verified, 0 activated, 1 deactivated, 1 deleted; 0 failed.\n',
    );
    expect(api.hooks.all('inline').map((h) => h.name)).toEqual(['not hooklog']);
    // With no hook of the config left to say where, the org is named; without one, the refusal says so.
    const none = cliConfig({ eventHook: false, tokenHook: false });
    const unnamed = await runCli(['hooks', 'apply', '--prune', '--config', none]);
    expect(unnamed.code).toBe(1);
    expect(unnamed.stderr).toContain("to remove hooklog's hooks from an org, name it: `--org <id> --prune`");
    const named = await runCli(['hooks', 'apply', '--prune', '--org', 'acme', '--config', none]);
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toBe(
      'Apply: 0 created, 0 updated, 0 verified, 0 activated, 0 deactivated, 0 deleted; 0 failed.\n',
    );
    expect(sim!.violations).toEqual([]);
  }, 90_000);
});

describe('an OAuth service app not granted the kind nothing registers any more', () => {
  it('is refused a token naming that scope, so hooklog asks again without it and plans, with a note', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwks = [{ ...(await exportJWK(rsa.publicKey)), kid: 'k1' }];
    await org({ auth: { clients: [{ clientId: 'app', jwks, scopes: ['okta.eventHooks.read'] }] } });
    const pem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const config = parseConfig(
      {
        hook_registration: { public_url: PUBLIC_URL },
        orgs: [
          {
            id: 'acme',
            base_url: sim!.url,
            auth: { oauth: { client_id: 'app', private_key: pem, key_id: 'k1' } },
            system_log: { enabled: false },
          },
        ],
        event_hooks: [
          { id: 'main', org: 'acme', auth: { secrets: [SECRET] }, register: { event_types: ['user.session.start'] } },
        ],
        token_hooks: [{ id: 'tokens', org: 'acme', auth: { type: 'header', secrets: [SECRET] } }],
      },
      {},
    );
    const scope = hookOrgs(config).get('acme')!;
    expect([...scope.alsoList]).toEqual(['inline']);
    const state = await readOrg(config, config.orgs[0]!, scope.desired, {
      access: 'read',
      prune: false,
      alsoList: scope.alsoList,
      logger: silentLogger(),
    });
    expect(state.errors).toEqual([]);
    expect(state.plans.map((p) => [p.id, p.steps])).toEqual([['main', ['create', 'verify']]]);
    expect(state.notes).toEqual([
      "org acme: inline hooks not listed (okta.inlineHooks.read not granted): hooklog's own hooks of that kind no longer configured are not shown",
    ]);
  });
});

describe('a failed read', () => {
  it('fails plan and status with the error, and prints no plan or table', async () => {
    await org({ auth: { ssws: ['sim-token', 'no-hooks'], sswsScopes: { 'no-hooks': ['okta.users.read'] } } });
    const configPath = cliConfig({ eventHook: true, tokenHook: false, token: 'no-hooks' });
    const denied =
      /^event hook "main" \(org acme\): list event hooks failed: HTTP 403: E0000006: [^\n]*; needs the okta\.eventHooks\.read scope \(OAuth\)[^\n]*\n$/;
    const plan = await runCli(['hooks', 'plan', '--config', configPath]);
    expect(plan.code).toBe(1);
    expect(plan.stdout).toBe('');
    expect(plan.stderr).toMatch(denied);
    const status = await runCli(['hooks', 'status', '--config', configPath]);
    expect(status.code).toBe(1);
    expect(status.stdout).toBe('');
    expect(status.stderr).toMatch(denied);
  }, 60_000);
});
