/**
 * Every request a delivery or an action took is on its record and in the metrics: with the simulated org failing
 * a seeded share of SET pushes and of management calls (503, faults.ts), each record's count equals the requests
 * the org saw for it, the org's client retries within one call and the calls offered again included.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { renderMetrics } from '../../platform/metrics.js';
import { total } from '../../test/support/metrics.js';
import { waitFor } from '../../test/support/wait.js';
import { cleanUp, setUp } from './testing/harness.js';
import { riskChange } from './testing.js';

afterEach(cleanUp);

const UNAVAILABLE = [{ kind: 'status', status: 503 }] as const;

describe('response: every attempt counted', () => {
  it('records how many pushes each SET took when the org answers 503 to one push in five', async () => {
    const t = await setUp();
    t.sets.faults.random(0.2, UNAVAILABLE, 7);
    const changes = Array.from({ length: 16 }, (_, i) => riskChange(t.org, { id: `00u${i}` }, 'none', 'high'));
    await t.append(...changes);
    const delivered = await waitFor(() => t.deliveries.values(), {
      until: (d) => d.length === changes.length,
      what: 'every SET delivered',
      timeoutMs: 60_000,
    });
    const injected = t.sets.faults.injected.get('status:503') ?? 0;
    expect(injected).toBeGreaterThan(0);
    // What the org saw: every push, by jti (each jti's pushes are the same bytes).
    const tokens = new Map(t.sets.accepted.map((s) => [s.jti, s.token]));
    const pushesOf = (jti: string) => t.sets.pushes.filter((p) => p === tokens.get(jti)).length;
    expect(delivered.map((d) => [d.jti, d.attempts])).toEqual(delivered.map((d) => [d.jti, pushesOf(String(d.jti))]));
    expect(delivered.reduce((n, d) => n + Number(d.attempts), 0)).toBe(t.sets.pushes.length);
    expect(Math.max(...delivered.map((d) => Number(d.attempts)))).toBeGreaterThan(1);
    expect(t.sim.violations).toEqual([]);

    const metrics = (await renderMetrics()).body;
    const org = { org: t.org };
    expect(total(metrics, 'hooklog_ssf_set_attempts_total', { ...org, reply: '5xx' })).toBe(injected);
    expect(total(metrics, 'hooklog_ssf_set_attempts_total', { ...org, reply: '2xx' })).toBe(changes.length);
    expect(total(metrics, 'hooklog_ssf_set_retries_total', org)).toBe(t.sets.pushes.length - changes.length);
  }, 90_000);

  it("records how many requests each action took when the org answers 503 to one call in three (the client's retries)", async () => {
    const t = await setUp({
      triggers: { on_level: { high: ['clear_sessions'] } },
      org: { security_events: { enabled: false }, actions: { mode: 'on', allow: ['clear_sessions'] } },
    });
    const users = Array.from({ length: 8 }, (_, i) => `00uu${i}`);
    for (const id of users) t.users.addUser(id, `${id}@acme.test`);
    t.users.faults.random(1 / 3, UNAVAILABLE, 3);
    await t.append(...users.map((id) => riskChange(t.org, { id }, 'none', 'high')));
    const done = await waitFor(() => t.actions.values().filter((v) => v.state === 'done'), {
      until: (d) => d.length === users.length,
      what: 'every action done',
      timeoutMs: 60_000,
    });
    const injected = t.users.faults.injected.get('status:503') ?? 0;
    expect(injected).toBeGreaterThan(0);
    const calls = (id: string) =>
      t.sim.requests.filter((r) => r.method === 'DELETE' && r.path === `/api/v1/users/${id}/sessions`).length;
    expect(done.map((d) => [d.user_id, d.attempt])).toEqual(done.map((d) => [d.user_id, calls(String(d.user_id))]));
    expect(Math.max(...done.map((d) => Number(d.attempt)))).toBeGreaterThan(1);
    // The start announced the first request; the retries were the client's, within that one start.
    expect(t.actions.values().filter((v) => v.state === 'started')).toHaveLength(users.length);
    for (const id of users) expect(t.users.count('clear_sessions', id)).toBe(1);
    expect(t.sim.violations).toEqual([]);

    const metrics = (await renderMetrics()).body;
    const labels = { org: t.org, action: 'clear_sessions' };
    expect(total(metrics, 'hooklog_response_action_attempts_total', { ...labels, reply: '5xx' })).toBe(injected);
    expect(total(metrics, 'hooklog_response_action_attempts_total', { ...labels, reply: '2xx' })).toBe(users.length);
    expect(total(metrics, 'hooklog_response_action_retries_total', labels)).toBe(injected);
  }, 90_000);
});
