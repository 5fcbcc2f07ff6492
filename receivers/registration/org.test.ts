/**
 * Registration against the simulated org over real HTTP (its hook API as
 * strict as the seed's contract): what `hooks apply` leaves behind is what the
 * next plan calls in sync, whatever way the config writes `public_url`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { silentLogger } from '../../platform/log.js';
import { HookManagementApi, SimulatedOrg } from '../../test/simulated-org/index.js';
import { applyPlans, hooksByOrg, readOrg } from './index.js';

const SECRET = 'token-hook-secret-0123456789';

let sim: SimulatedOrg | undefined;
afterEach(async () => sim?.stop());

async function org() {
  sim = await SimulatedOrg.start({});
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
