/**
 * Hook registration under the service's rate limits (issue 41, item 17), against the simulated org over real
 * HTTP with 429s injected into its hook management API: a 429 is waited out until its own X-Rate-Limit-Reset
 * (not the end of the window an earlier reply named), the wait is said on stderr with that time, and an org
 * answering 429 to everything fails the command within `IdpPolicies.commandWait` with IDP_RATE_LIMITED.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { withPolicies } from '../../platform/identity/policies.js';
import { silentLogger } from '../../platform/log.js';
import { HookManagementApi, SimulatedOrg } from '../../test/simulated-org/index.js';
import { runCli } from '../../test/support/cli.js';
import { writeTestConfig } from '../../test/support/hooklog-config.js';
import { hooksByOrg, readOrg } from './index.js';

const SECRET = 'token-hook-secret-0123456789';
/** One window an hour: a wait for the end of the window last seen would outlast every test here. */
const HOUR_BUCKET = { limit: 1_000, windowMs: 3_600_000 } as const;

let sim: SimulatedOrg | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

async function world() {
  const org = await SimulatedOrg.start({ rateLimit: { management: HOUR_BUCKET } });
  sim = org;
  const api = new HookManagementApi(org);
  org.use(api);
  // One token hook: registering it makes no call to hooklog (inline hooks are not verified).
  const raw = {
    hook_registration: { public_url: 'https://hooklog.example.com' },
    orgs: [{ id: 'acme', base_url: org.url, auth: { ssws: { token: 'sim-token' } }, system_log: { enabled: false } }],
    event_hooks: [],
    token_hooks: [{ id: 'tokens', org: 'acme', auth: { type: 'header', secrets: [SECRET] }, register: {} }],
  };
  return { org, api, raw };
}

describe('hooks plan | apply under 429s', () => {
  it('a 429 whose Reset is 2 s away: apply waits for that Reset, not the window it saw before, and says until when', async () => {
    const { org, api, raw } = await world();
    const inst = writeTestConfig({ extra: raw });
    // plan reads the inline hooks: the host's budget (data_dir) now knows this hour's window, Remaining 999.
    const plan = await runCli(['hooks', 'plan', '--config', inst.configPath]);
    expect(plan.code, plan.stderr).toBe(0);
    api.faults.next({ kind: '429', reset: { inMs: 2_000 } });
    const apply = await runCli(['hooks', 'apply', '--config', inst.configPath]);
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toMatch(/token hook "tokens" \(org acme, cal\w+\): created\n/);
    expect(api.named('inline', 'hooklog:tokens')).toHaveLength(1);

    const i = org.requests.findIndex((r) => r.status === 429);
    expect(i, 'one 429').toBeGreaterThan(0);
    const limited = org.requests[i]!;
    const resetMs = Math.ceil((limited.at + 2_000) / 1000) * 1000;
    // The retry went right after the 429's own Reset (plus at most a second of jitter).
    const retry = org.requests[i + 1]!;
    expect(retry.at).toBeGreaterThanOrEqual(resetMs);
    expect(retry.at - resetMs).toBeLessThan(2_000);
    // stderr said what it waited for, and until when.
    const said =
      /GET \/api\/v1\/inlineHooks: rate limited \(429\): waiting until (\S+) \(the reply's X-Rate-Limit-Reset\)/.exec(
        apply.stderr,
      );
    expect(said, apply.stderr).not.toBeNull();
    const until = Date.parse(said![1]!);
    expect(until).toBeGreaterThanOrEqual(resetMs);
    expect(until - resetMs).toBeLessThanOrEqual(1_000);
    expect(org.violations).toEqual([]);
  }, 60_000);

  it('an org answering 429 to everything: plan fails within the bound on waiting, with IDP_RATE_LIMITED', async () => {
    const { org, api, raw } = await world();
    const config = parseConfig(raw, {});
    const desired = hooksByOrg(config).get('acme')!;
    api.faults.random(1, [{ kind: '429', reset: { inMs: 1_000 } }]);
    const started = Date.now();
    const state = await readOrg(config, config.orgs[0]!, desired, {
      access: 'read',
      prune: false,
      logger: silentLogger(),
      policies: withPolicies({ commandWait: { maxMs: 4_000 } }),
    });
    const took = Date.now() - started;
    expect(state.errors).toHaveLength(1);
    expect(state.errors[0]).toMatch(
      /^token hook "tokens" \(org acme\): list inline hooks failed: IDP_RATE_LIMITED: org acme: GET \/api\/v1\/inlineHooks: rate limited: the service answered 429 \(E0000047: API call exceeded rate limit due to too many requests\.\); waiting would end at \S+Z, after this command's limit on waiting \(\S+Z\)$/,
    );
    expect(took).toBeLessThan(4_000 + 1_000);
    // It waited for each 429's Reset while that fitted the bound, then gave up instead of asking again.
    const limited = org.requests.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(2);
    expect(limited.length).toBeLessThanOrEqual(5);
  }, 30_000);

  it('a 429 whose Reset is past the bound fails at once, naming the Reset', async () => {
    const { org, api, raw } = await world();
    const config = parseConfig(raw, {});
    const desired = hooksByOrg(config).get('acme')!;
    api.faults.next({ kind: '429', reset: 'honest' }); // the hour's window: ends up to an hour from now
    const state = await readOrg(config, config.orgs[0]!, desired, {
      access: 'read',
      prune: false,
      logger: silentLogger(),
      policies: withPolicies({ commandWait: { maxMs: 1_000 } }),
    });
    expect(state.errors[0]).toContain('IDP_RATE_LIMITED');
    expect(org.requests.filter((r) => r.path.startsWith('/api/v1/'))).toHaveLength(1);
  });
});
