/**
 * Hooks named like hooklog's but made by someone else (issue 41, item 18), through the CLI against the
 * simulated org: another admin's two inline hooks named `hooklog:tokens`, with their own URI and secret. `plan`
 * names them as left alone; `apply --prune` creates hooklog's own beside them and neither takes one over with
 * an update nor deletes the second as a duplicate.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HookManagementApi, SimulatedOrg } from '../../test/simulated-org/index.js';
import type { SimHook } from '../../test/simulated-org/hook-registry.js';
import { runCli } from '../../test/support/cli.js';
import { writeTestConfig } from '../../test/support/hooklog-config.js';

const SECRET = 'token-hook-secret-0123456789';
const THEIR_SECRET = 'their-own-secret-9876543210';

let sim: SimulatedOrg | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

describe("hooks named like hooklog's but not made by it", () => {
  it('are named in the plan and left alone by apply --prune, which creates its own beside them', async () => {
    sim = await SimulatedOrg.start();
    const api = new HookManagementApi(sim);
    sim.use(api);
    const theirs = [0, 1].map((i) => {
      const made = api.hooks.create('inline', {
        name: 'hooklog:tokens',
        type: 'com.okta.oauth2.tokens.transform',
        version: '1.0.0',
        channel: {
          type: 'HTTP',
          version: '1.0.0',
          config: {
            uri: `https://claims.example.com/transform/${i}`,
            authScheme: { type: 'HEADER', key: 'authorization', value: THEIR_SECRET },
          },
        },
      });
      if (!('kind' in made)) throw new Error(`the org refused the hook: ${JSON.stringify(made.body)}`);
      return made;
    });
    const snapshot = (h: SimHook) => JSON.stringify({ status: h.status, name: h.name, channel: h.channel });
    const before = theirs.map(snapshot);
    const inst = writeTestConfig({
      extra: {
        hook_registration: { public_url: 'https://hooklog.example.com' },
        orgs: [
          { id: 'acme', base_url: sim.url, auth: { ssws: { token: 'sim-token' } }, system_log: { enabled: false } },
        ],
        event_hooks: [],
        token_hooks: [{ id: 'tokens', org: 'acme', auth: { type: 'header', secrets: [SECRET] }, register: {} }],
      },
    });
    const cli = (args: string[]) => runCli(['hooks', ...args, '--config', inst.configPath]);

    const plan = await cli(['plan', '--prune']);
    expect(plan.code, plan.stderr).toBe(0);
    for (const h of theirs)
      expect(plan.stdout).toContain(
        `? token hook "hooklog:tokens" (org acme, ${h.id}): left alone: named like hooklog's hooks, but not made by hooklog ` +
          `(no x-hooklog-secret-id header; it calls "${h.channel.config.uri}")`,
      );
    expect(plan.stdout).toContain('+ token hook "tokens" (org acme): create "hooklog:tokens"');
    expect(plan.stdout).toContain('Plan: 1 to create, 0 to change, 0 to delete, 0 in sync, 0 refused.');

    const apply = await cli(['apply', '--prune']);
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toMatch(/token hook "tokens" \(org acme, cal\w+\): created\n/);
    for (const h of theirs)
      expect(apply.stdout).toContain(`token hook "hooklog:tokens" (org acme, ${h.id}): left alone`);
    expect(apply.stdout).toContain('Apply: 1 created, 0 updated, 0 verified, 0 activated, 0 deactivated, 0 deleted');
    // Theirs: both still there, exactly as they were (URI, secret, status).
    expect(theirs.map((h) => api.hooks.get('inline', h.id)).map((h) => (h ? snapshot(h) : null))).toEqual(before);
    const ours = api.named('inline', 'hooklog:tokens').filter((h) => !theirs.some((t) => t.id === h.id));
    expect(ours).toHaveLength(1);
    expect(ours[0]!.channel.config).toMatchObject({
      uri: 'https://hooklog.example.com/hooks/token/tokens',
      authScheme: { value: SECRET },
    });

    // Again: hooklog's is in sync, theirs are still left alone.
    const again = await cli(['apply', '--prune']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`token hook "tokens" \\(org acme, ${ours[0]!.id}\\): in sync\\n`));
    expect(again.stdout).toContain('Apply: 0 created, 0 updated, 0 verified, 0 activated, 0 deactivated, 0 deleted');
    expect(theirs.map((h) => api.hooks.get('inline', h.id)).map((h) => (h ? snapshot(h) : null))).toEqual(before);
    expect(sim.violations).toEqual([]);
  }, 60_000);
});
