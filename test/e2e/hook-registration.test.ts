/**
 * Hooks that register themselves, end to end: the real CLI against the
 * simulated org's hook management API, hooklog serving HTTPS itself (a CA made
 * for the test, which the org trusts). From an empty org, `hooks apply`
 * creates, verifies (the org's real verification exchange against the running
 * hooklog) and activates the event hook and the token hook; events the org
 * then delivers reach ClickHouse; a second apply makes no call that changes
 * anything; a hook deactivated by hand shows in `hooks status`, in the
 * metrics and as an alert, and apply repairs it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { RateBudget } from '../../platform/identity/rate-limit.js';
import { tokenHookRequest } from '../fixtures/index.js';
import { call } from '../simulated-org/hook-calls.js';
import { logEvent } from '../simulated-org/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { storeRows } from '../support/hooklog-config.js';
import { total } from '../support/metrics.js';
import { waitFor } from '../support/wait.js';
import {
  EVENT_SECRET,
  EVENT_TYPES,
  HOOK_BUCKET,
  registrationWorld,
  type RegistrationWorld,
} from './hook-registration.js';

const CHANGING = ['POST', 'PUT', 'DELETE'];

describe('hooks plan | apply | status against the simulated org', () => {
  let w: RegistrationWorld | undefined;
  let daemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    await w?.stop();
  });

  it('registers, verifies and activates from an empty org; events flow; idempotent; a hand-made deactivation is seen, alerted and repaired', async () => {
    w = await registrationWorld();
    const world = w;
    daemon = await startDaemon(['--config', world.inst.configPath], { PORT: String(world.port) });
    expect(daemon.url).toBe(`https://127.0.0.1:${world.port}`);
    const metrics = async () =>
      (await call(`${daemon!.url}/metrics`, { method: 'GET', headers: {}, ca: world.cert.cert, timeoutMs: 3000 })).body;
    const sql = async (q: string) => {
      const r = await runCli(['sql', q, '--format', 'json', '--config', world.inst.configPath], { PORT: '0' });
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    };
    // The waits poll the store through the daemon's admin socket (storeRows), not a CLI process per poll; the last
    // check goes through `hooklog sql`.
    const query = (q: string) => storeRows(world.inst.configPath, q);

    // plan: both hooks to create, nothing changed.
    const plan = await world.cli(['hooks', 'plan']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`+ event hook "okta-main" (org ${world.org}): create, verify "hooklog:okta-main"`);
    expect(plan.stdout).toContain(`+ token hook "okta-tokens" (org ${world.org}): create "hooklog:okta-tokens"`);
    expect(plan.stdout).toContain('Plan: 2 to create, 0 to change, 0 to delete, 0 in sync, 0 refused.');
    expect(world.sim.requests.every((r) => r.method === 'GET')).toBe(true);

    // apply: created, verified against the running hooklog, active.
    const apply = await world.cli(['hooks', 'apply']);
    expect(apply.code, apply.stderr + apply.stdout).toBe(0);
    expect(apply.stdout).toMatch(/event hook "okta-main" \(org [^,]+, who\w+\): created, verified/);
    expect(apply.stdout).toMatch(/token hook "okta-tokens" \(org [^,]+, cal\w+\): created/);
    const [hook] = world.api.named('event', 'hooklog:okta-main');
    const [inline] = world.api.named('inline', 'hooklog:okta-tokens');
    expect(hook).toMatchObject({ status: 'ACTIVE', verificationStatus: 'VERIFIED', events: { items: EVENT_TYPES } });
    expect(hook!.channel.config).toMatchObject({
      uri: `https://127.0.0.1:${world.port}/hooks/events/okta-main`,
      authScheme: { type: 'HEADER', key: 'authorization', value: EVENT_SECRET },
    });
    expect(inline).toMatchObject({ status: 'ACTIVE', type: 'com.okta.oauth2.tokens.transform' });
    // The secret is write-only: what the API answers never holds it.
    const listed = await world.admin('GET', '/api/v1/eventHooks');
    expect(JSON.stringify(listed.body)).not.toContain(EVENT_SECRET);

    // Events flow: the org delivers what the hook subscribes to, hooklog stores it.
    const stored = world.sim.addLogEvents(
      Array.from({ length: 30 }, (_, i) => ({
        event: { ...logEvent(i), eventType: [...EVENT_TYPES, 'policy.lifecycle.update'][i % 3] },
        published: Date.now() - i,
      })),
    );
    await world.api.deliver(stored);
    expect(world.api.attempts.length).toBeGreaterThan(0);
    expect(world.api.attempts.every((a) => a.status === 204)).toBe(true);
    const countSql = `SELECT count() AS n FROM events WHERE org = '${world.org}' AND event_type != 'hooklog.hook.drift'`;
    await waitFor(async () => Number((await query(countSql))[0]!.n), {
      until: (n) => n === 20,
      what: '20 events in ClickHouse',
      timeoutMs: 30_000,
    });
    // The token hook answers the org with the secret apply registered.
    const answer = await world.api.callInline(inline!.id, tokenHookRequest());
    expect(answer.status).toBe(204);

    // A second apply changes nothing: only GETs reach the org.
    const before = world.sim.requests.length;
    const again = await world.cli(['hooks', 'apply']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('event hook "okta-main"');
    expect(again.stdout).toMatch(/okta-main.*: in sync/);
    expect(again.stdout).toContain(
      'Apply: 0 created, 0 updated, 0 verified, 0 activated, 0 deactivated, 0 deleted; 0 failed.',
    );
    const calls = world.sim.requests.slice(before);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.filter((r) => CHANGING.includes(r.method))).toEqual([]);

    // The watch sees it in order.
    const labels = { org: world.org, kind: 'event', hook: 'okta-main' };
    await waitFor(async () => total(await metrics(), 'hooklog_hook_verified', labels), {
      until: (n) => n === 1,
      what: 'verified=1',
    });
    expect(total(await metrics(), 'hooklog_hook_matches_config', labels)).toBe(1);

    // An admin deactivates the event hook by hand.
    const off = await world.admin('POST', `/api/v1/eventHooks/${hook!.id}/lifecycle/deactivate`);
    expect(off.status).toBe(200);
    const status = await world.cli(['hooks', 'status', '--format', 'json']);
    expect(status.code, status.stderr).toBe(0);
    const rows = JSON.parse(status.stdout) as Array<Record<string, string>>;
    expect(rows.find((r) => r.hook === 'okta-main')).toMatchObject({
      kind: 'event',
      id: hook!.id,
      status: 'INACTIVE',
      verification: 'VERIFIED',
      events: EVENT_TYPES.join(','),
      drift: 'INACTIVE',
    });
    expect(rows.find((r) => r.hook === 'okta-tokens')).toMatchObject({ status: 'ACTIVE', drift: 'none' });
    await waitFor(async () => total(await metrics(), 'hooklog_hook_active', labels), {
      until: (n) => n === 0,
      what: 'active=0 in /metrics',
    });
    // The alert: one for this finding (the hooks absent before the first apply were none: never applied yet).
    const deactivatedSql = `SELECT a.org AS org, a.group_key AS group_key FROM alerts AS a FINAL ARRAY JOIN a.event_ids AS eid
         INNER JOIN events AS e ON e.uuid = eid
         WHERE a.rule_id = 'hooklog.hook.registration.drift' AND e.outcome_reason = 'deactivated'`;
    await waitFor(async () => (await query(deactivatedSql)).length, {
      until: (n) => n === 1,
      what: 'the drift alert',
      timeoutMs: 30_000,
    });
    expect((await query(deactivatedSql))[0]).toMatchObject({ org: world.org, group_key: '["okta-main"]' });
    // While it is inactive, the org sends it nothing.
    const quiet = world.sim.addLogEvents([
      { event: { ...logEvent(100), eventType: EVENT_TYPES[0] }, published: Date.now() },
    ]);
    await world.api.deliver(quiet);
    expect(world.api.skipped.get(hook!.id)).toBe(1);

    // apply repairs it: activated, nothing else.
    const repair = await world.cli(['hooks', 'apply']);
    expect(repair.code, repair.stderr).toBe(0);
    expect(repair.stdout).toMatch(/event hook "okta-main" \(org [^,]+, who\w+\): activated\n/);
    expect(world.api.named('event', 'hooklog:okta-main')[0]).toMatchObject({
      status: 'ACTIVE',
      verificationStatus: 'VERIFIED',
    });
    await waitFor(async () => total(await metrics(), 'hooklog_hook_active', labels), {
      until: (n) => n === 1,
      what: 'active=1 again',
    });
    const sync = await world.cli(['hooks', 'status']);
    expect(sync.stdout).toMatch(/okta-main .*│ none\s*$/m);
    // One finding, one alert: the watch appended it once though it saw it on every pass.
    const alerts = await sql(deactivatedSql);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ org: world.org, group_key: '["okta-main"]' });
    expect(world.sim.violations).toEqual([]);
    // Nothing of hooklog's waited for the management budget: no window took its share (management.rate_limit_share,
    // default 0.3), so the watch read every pass and the waits above saw each change a pass or two after it.
    const allowed = new RateBudget({ share: 0.3 }).allowedPerWindow(HOOK_BUCKET.limit);
    for (const family of ['eventHooks', 'inlineHooks'] as const)
      expect(world.busiestWindow(family), family).toBeLessThan(allowed);
  }, 240_000);
});
