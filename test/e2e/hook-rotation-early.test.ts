/**
 * A rotation applied before the receivers accept the new secret (step 1 of the procedure in
 * docs/operate/registering-hooks.md skipped; issue 41, item 19): the CLI against the simulated org and a running
 * hooklog that accepts the old secret only. apply sends hooklog the verification challenge with the new secret
 * itself, gets 401, and refuses the PUT, saying why: the hook stays VERIFIED with the old secret and deliveries
 * go on. Once hooklog accepts both, the same apply registers the new one.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { logEvent } from '../simulated-org/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import {
  EVENT_TYPES,
  NEW_SECRET as NEW,
  OLD_SECRET as OLD,
  cliEnv,
  registrationWorld,
  withSecrets,
  type RegistrationWorld,
} from './hook-registration.js';

describe('a rotation applied before the receivers accept the new secret', () => {
  let w: RegistrationWorld | undefined;
  let daemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    await w?.stop();
  });

  it('is refused before the PUT, saying why; the hook stays verified with the old secret', async () => {
    w = await registrationWorld({ eventSecrets: [NEW, OLD], tokenHook: false });
    const world = w;
    const env = cliEnv(world.port, world.cert);
    const rotating = world.inst.configPath;
    const before = withSecrets(rotating, 'before', [OLD]);
    const cli = (args: string[], config: string) => runCli([...args, '--config', config], env);

    // hooklog runs with the old secret only; the service holds it, verified.
    daemon = await startDaemon(['--config', before], env);
    const first = await cli(['hooks', 'apply'], before);
    expect(first.code, first.stderr).toBe(0);
    const [hook] = world.api.named('event', 'hooklog:okta-main');
    expect(hook).toMatchObject({ verificationStatus: 'VERIFIED' });

    // The rotation's config, applied while the running hooklog still knows only the old secret.
    const changing = world.sim.requests.length;
    const early = await cli(['hooks', 'apply'], rotating);
    expect(early.code).toBe(1);
    expect(early.stderr).toBe(
      `event hook "okta-main" (org ${world.org}): update refused: hooklog at https://127.0.0.1:${world.port}/hooks/events/okta-main ` +
        'does not answer the verification challenge with the secret to be registered (the first of auth.secrets): ' +
        'it answered HTTP 401 (it does not accept that secret). The service would hold the hook UNVERIFIED and deliver ' +
        'nothing; have every receiver accept that secret first (step 1 of a rotation). The hook keeps what it has\n',
    );
    expect(early.stdout).toContain(
      'Apply: 0 created, 0 updated, 0 verified, 0 activated, 0 deactivated, 0 deleted; 1 failed.',
    );
    // No call that changes anything reached the service: the hook is as it was, and the org still delivers to it.
    expect(world.sim.requests.slice(changing).filter((r) => r.method !== 'GET')).toEqual([]);
    expect(world.api.hooks.get('event', hook!.id)).toMatchObject({
      verificationStatus: 'VERIFIED',
      channel: { config: { authScheme: { value: OLD } } },
    });
    const sent = world.api.attempts.length;
    await world.api.deliver(
      world.sim.addLogEvents([{ event: { ...logEvent(1), eventType: EVENT_TYPES[0] }, published: Date.now() }]),
    );
    expect(world.api.attempts.slice(sent).map((a) => [a.status, a.secret])).toEqual([[204, OLD]]);

    // Step 1 done (hooklog accepts both, the new one first): the same apply now registers the new secret.
    await stopDaemon(daemon);
    daemon = await startDaemon(['--config', rotating], env);
    const apply = await cli(['hooks', 'apply'], rotating);
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toMatch(/event hook "okta-main" \(org [^,]+, who\w+\): updated, verified/);
    expect(world.api.hooks.get('event', hook!.id)).toMatchObject({
      verificationStatus: 'VERIFIED',
      channel: { config: { authScheme: { value: NEW } } },
    });
    expect(world.sim.violations).toEqual([]);
  }, 240_000);
});
