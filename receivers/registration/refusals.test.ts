/**
 * What apply says when it cannot do something, against the simulated org over
 * real HTTP: one line per problem, naming the hook, the step and the reason
 * (the service's errorCode, errorSummary and causes). The inline-hook limit,
 * an http public URL (refused at load), a verification that fails (endpoint unreachable, wrong
 * answer, time-out: the org's real exchange against an endpoint made for the
 * case) and a 403 for a token without the manage scope.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { silentLogger } from '../../platform/log.js';
import { HookManagementApi, SimulatedOrg } from '../../test/simulated-org/index.js';
import { runCli } from '../../test/support/cli.js';
import { writeTestConfig } from '../../test/support/hooklog-config.js';
import { makeTestCertificate } from '../../test/support/tls.js';
import { applyPlans, hooksByOrg, readOrg } from './index.js';

const SECRET = 'event-hook-secret-0123456789';
const cert = makeTestCertificate();

let sim: SimulatedOrg | undefined;
let api: HookManagementApi | undefined;
const servers: Server[] = [];
afterEach(async () => {
  await sim?.stop();
  for (const s of servers.splice(0)) {
    s.close();
    s.closeAllConnections();
  }
});

async function org(opts: Parameters<typeof SimulatedOrg.start>[0] = {}) {
  sim = await SimulatedOrg.start(opts);
  api = new HookManagementApi(sim, { ca: cert.cert, verifyTimeoutMs: 300 });
  sim.use(api);
  return sim;
}

/** An https endpoint with the test's certificate answering every request with `answer` (or never). */
async function endpoint(answer: ((res: import('node:http').ServerResponse) => void) | 'never'): Promise<string> {
  const server = createServer({ cert: cert.cert, key: readFileSync(cert.keyPath) }, (_req, res) => {
    if (answer !== 'never') answer(res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function hooklogConfig(publicUrl: string, over: { token?: string; tokenHooks?: number } = {}) {
  return {
    hook_registration: { public_url: publicUrl },
    orgs: [
      {
        id: 'acme',
        base_url: sim!.url,
        auth: { ssws: { token: over.token ?? 'sim-token' } },
        system_log: { enabled: false },
      },
    ],
    event_hooks: [
      { id: 'main', org: 'acme', auth: { secrets: [SECRET] }, register: { event_types: ['user.session.start'] } },
    ],
    token_hooks: Array.from({ length: over.tokenHooks ?? 0 }, (_, i) => ({
      id: `tokens${i}`,
      org: 'acme',
      auth: { type: 'header', secrets: [SECRET] },
      register: {},
    })),
  };
}

/** `hooks apply` in-process: the lines it prints for problems. */
async function applyLines(raw: Record<string, unknown>): Promise<string[]> {
  const config = parseConfig(raw, {});
  const lines: string[] = [];
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
    lines.push(...state.errors);
    const applied = state.service
      ? await applyPlans(state.service, state.plans, { challenge: { ca: cert.cert, timeoutMs: 300 } })
      : [];
    for (const o of applied) {
      if (o.error) lines.push(o.error);
    }
  }
  return lines;
}

describe('hooks apply: refusals, one line each', () => {
  it('an http public URL: refused at load, naming the key, before the service is asked anything', async () => {
    await org();
    await expect(applyLines(hooklogConfig('http://127.0.0.1:8080'))).rejects.toThrow(
      'config key "hook_registration.public_url": must be an https:// URL: the identity service calls hooks only over https (TLS may end at a proxy in front of hooklog)',
    );
    expect(sim!.requests).toEqual([]);
    expect(api!.hooks.all('event')).toEqual([]);
  });

  it('a verification that fails says why: unreachable, a wrong answer, a time-out', async () => {
    await org();
    const free = await endpoint('never');
    servers.pop()!.close(); // a port where nothing listens any more
    const wrong = await endpoint((res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"verification":"nope"}'),
    );
    const slow = await endpoint('never');
    const [unreachable] = await applyLines(hooklogConfig(free));
    expect(unreachable).toMatch(
      /^event hook "main" \(org acme\): verify failed: HTTP 400: E0000001: Event hook verification failed \(The verification request could not be sent: could not reach https:\/\/127\.0\.0\.1:\d+\/hooks\/events\/main: ECONNREFUSED\.\)$/,
    );
    // The hook was created (ACTIVE, UNVERIFIED); the next apply only verifies it, and says why it still fails.
    expect(api!.hooks.all('event')).toMatchObject([{ status: 'ACTIVE', verificationStatus: 'UNVERIFIED' }]);
    api!.hooks.remove(Object.assign(api!.hooks.all('event')[0]!, { status: 'INACTIVE' as const }));
    expect(await applyLines(hooklogConfig(wrong))).toEqual([
      'event hook "main" (org acme): verify failed: HTTP 400: E0000001: Event hook verification failed (The endpoint answered without the verification value it was sent.)',
    ]);
    // A hook whose URI changes is updated only once the new endpoint answers the challenge apply sends it first:
    // here it never answers, so the hook keeps the URI it has.
    expect(await applyLines(hooklogConfig(slow))).toEqual([
      `event hook "main" (org acme): update refused: hooklog at ${slow}/hooks/events/main does not answer the verification challenge with the secret to be registered (the first of auth.secrets): no answer within 300 ms. The service would hold the hook UNVERIFIED and deliver nothing; have every receiver accept that secret first (step 1 of a rotation). The hook keeps what it has`,
    ]);
    expect(api!.hooks.all('event')[0]!.channel.config.uri).toBe(`${wrong}/hooks/events/main`);
    expect(sim!.violations).toEqual([]);
  });

  it('a token without the manage scope: 403, the line naming what it needs; plan still reads', async () => {
    await org({
      auth: {
        ssws: ['sim-token', 'read-only'],
        sswsScopes: { 'read-only': ['okta.eventHooks.read', 'okta.inlineHooks.read'] },
      },
    });
    const url = await endpoint((res) => res.end());
    expect(await applyLines(hooklogConfig(url, { token: 'read-only' }))).toEqual([
      'event hook "main" (org acme): create failed: HTTP 403: E0000006: You do not have permission to perform the requested action; needs the okta.eventHooks.manage scope (OAuth), or an admin role that may manage hooks (SSWS token)',
    ]);
    expect(api!.hooks.all('event')).toEqual([]);
  });

  it('the inline-hook limit, through the CLI: the hooks that fit are created, the rest refused by name, exit 1', async () => {
    await org();
    const url = await endpoint((res) => res.end());
    for (let i = 0; i < 8; i++) {
      const made = api!.hooks.create('inline', {
        name: `someone else's ${i}`,
        type: 'com.okta.import.transform',
        version: '1.0.0',
        channel: { type: 'HTTP', version: '1.0.0', config: { uri: 'https://elsewhere.example.com/x' } },
      });
      expect('kind' in made).toBe(true);
    }
    const inst = writeTestConfig({ extra: { ...hooklogConfig(url, { tokenHooks: 3 }), event_hooks: [] } });
    const r = await runCli(['hooks', 'apply', '--config', inst.configPath]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /token hook "tokens0" \(org acme, cal\w+\): created\ntoken hook "tokens1" \(org acme, cal\w+\): created\n/,
    );
    expect(r.stderr).toBe(
      'token hook "tokens2" (org acme): cannot create: the org has 10 inline hooks and the service allows 10 per org (all types); delete one it no longer needs\n',
    );
    expect(api!.hooks.all('inline')).toHaveLength(10);
    // The service holds the limit itself too.
    const eleventh = api!.hooks.create('inline', {
      name: 'one more',
      type: 'com.okta.oauth2.tokens.transform',
      version: '1.0.0',
      channel: { type: 'HTTP', version: '1.0.0', config: { uri: 'https://elsewhere.example.com/y' } },
    });
    expect(eleventh).toMatchObject({ status: 400, body: { errorCode: 'E0000001' } });
  }, 60_000);
});
