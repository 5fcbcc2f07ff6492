/**
 * Rotating an event hook's secret without losing a delivery, by the
 * procedure docs/operate/registering-hooks.md gives ("Rotating a hook's secret"): the receiver takes
 * both secrets (new first), `hooks apply` registers the new one (PUT, verify
 * again), the metric shows when the service stopped using the old one, and
 * only then is the old one removed. The simulated org delivers all the while;
 * not one delivery is refused.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { call } from '../simulated-org/hook-calls.js';
import { logEvent } from '../simulated-org/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { total } from '../support/metrics.js';
import { waitFor } from '../support/wait.js';
import {
  EVENT_TYPES,
  NEW_SECRET as NEW,
  OLD_SECRET as OLD,
  cliEnv,
  registrationWorld,
  withSecrets,
  type RegistrationWorld,
} from './hook-registration.js';

describe('rotating an event hook secret', () => {
  let w: RegistrationWorld | undefined;
  let daemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    await w?.stop();
  });

  it('keeps deliveries flowing, none refused, while the secret is rotated and the old one retired', async () => {
    w = await registrationWorld({ eventSecrets: [NEW, OLD], tokenHook: false });
    const world = w;
    const env = cliEnv(world.port, world.cert);
    const rotating = world.inst.configPath;
    const before = withSecrets(rotating, 'before', [OLD]);
    const after = withSecrets(rotating, 'after', [NEW]);
    const cli = (args: string[], config: string) => runCli([...args, '--config', config], env);

    // Step 1: every receiver takes both secrets, the new one first.
    daemon = await startDaemon(['--config', rotating], env);
    // The service holds the old secret, as an apply before the rotation registered it.
    const first = await cli(['hooks', 'apply'], before);
    expect(first.code, first.stderr).toBe(0);
    expect(world.api.named('event', 'hooklog:okta-main')[0]).toMatchObject({ verificationStatus: 'VERIFIED' });

    // The org delivers continuously from here on.
    let flowing = true;
    let n = 0;
    const loop = (async () => {
      while (flowing) {
        const events = world.sim.addLogEvents(
          [0, 1].map(() => ({ event: { ...logEvent(n), eventType: EVENT_TYPES[n++ % 2] }, published: Date.now() })),
        );
        await world.api.deliver(events);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const carried = (secret: string) => world.api.attempts.filter((a) => a.secret === secret).length;
    try {
      await waitFor(() => carried(OLD), { until: (count) => count >= 5, what: 'deliveries with the old secret' });

      // Step 2: plan shows the rotation, apply registers the first secret (PUT, verified again).
      const plan = await cli(['hooks', 'plan'], rotating);
      expect(plan.stdout).toContain('update, verify (secret: the service holds the second (old) one)');
      const apply = await cli(['hooks', 'apply'], rotating);
      expect(apply.code, apply.stderr).toBe(0);
      expect(apply.stdout).toMatch(/event hook "okta-main" \(org [^,]+, who\w+\): updated, verified/);
      await waitFor(() => carried(NEW), { until: (count) => count >= 5, what: 'deliveries with the new secret' });

      // Step 3: the service uses the new one; the old one's count has stopped growing.
      const status = await cli(['hooks', 'plan'], rotating);
      expect(status.stdout).toContain('in sync (ACTIVE, VERIFIED) [the service holds the first secret');
      const metrics = async () =>
        (await call(`${daemon!.url}/metrics`, { method: 'GET', headers: {}, ca: world.cert.cert, timeoutMs: 3000 }))
          .body;
      const used = async (secret: string) =>
        total(await metrics(), 'hooklog_event_hook_secret_matches_total', { hook: 'okta-main', secret });
      const oldUses = await used('2');
      expect(oldUses).toBeGreaterThanOrEqual(5);
      const newUses = await used('1');
      await waitFor(async () => await used('1'), {
        until: (count) => count > newUses + 3,
        what: 'the new secret in use',
      });
      expect(await used('2')).toBe(oldUses);
    } finally {
      flowing = false;
      await loop;
    }

    // Step 4: the old secret retired (a restart with the new one only); deliveries go on.
    await stopDaemon(daemon);
    daemon = await startDaemon(['--config', after], env);
    const sent = world.api.attempts.length;
    await world.api.deliver(
      world.sim.addLogEvents([{ event: { ...logEvent(9999), eventType: EVENT_TYPES[0] }, published: Date.now() }]),
    );
    expect(world.api.attempts.length).toBe(sent + 1);
    const retired = await cli(['hooks', 'plan'], after);
    expect(retired.stdout).toMatch(/= event hook "okta-main" .*: in sync \(ACTIVE, VERIFIED\)\n/);

    // Not one delivery refused, from the first to the last.
    expect(world.api.attempts.map((a) => a.status).filter((s) => s !== 204)).toEqual([]);
    expect(world.api.attempts.length).toBeGreaterThan(10);
    expect(world.sim.violations).toEqual([]);
  }, 240_000);
});
