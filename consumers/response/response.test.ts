/**
 * The response component on real parts: the Kafka broker and the simulated org
 * verifying SETs against the JWKS it fetches from hooklog's well-known URL.
 * Risk changes are appended the way the risk state writes them
 * (schemas/risk.ts); what must come out: one SET per change, verified, in
 * order; the user's sessions cleared once; every step recorded; refusals
 * dead-lettered with the receiver's err; 5xx retried with the same bytes;
 * a restart repeating nothing; the org's rate limits kept.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Collector } from '../../test/simulated-org/harness.js';
import { renderMetrics } from '../../platform/metrics.js';
import { waitFor } from '../../test/support/wait.js';
import { USER_RISK_CHANGE } from './config.js';
import { cleanUp, setUp } from './testing/harness.js';
import { riskChange } from './testing.js';

afterEach(cleanUp);

const levels = (s: { claims: { events: Record<string, Record<string, unknown>> } }) => {
  const e = s.claims.events[USER_RISK_CHANGE]!;
  return `${String(e.previous_level)}→${String(e.current_level)}`;
};
const states = (c: Collector) => c.values().map((v) => `${String(v.action)}:${String(v.state)}`);

describe('response: risk changes → SETs and actions (Kafka, simulated org)', () => {
  it('sends one verified SET per change in order, clears sessions once, records every step; a restart repeats nothing', async () => {
    const t = await setUp({
      triggers: { on_level: { high: ['clear_sessions'] } },
      org: { actions: { mode: 'on', allow: ['clear_sessions'] } },
    });
    const ann = { id: '00uann', login: 'ann@acme.test' };
    const up = riskChange(t.org, ann, 'none', 'high');
    const down = riskChange(t.org, ann, 'high', 'none', { alert_id: up.alert_id });
    await t.append(up, down);
    await waitFor(() => t.sets.distinct === 2 && t.deliveries.records.length === 2, {
      what: 'two SETs delivered',
      seen: () => ({ 't.sets.distinct': t.sets.distinct, 't.deliveries.records.length': t.deliveries.records.length }),
    });
    expect(t.sets.sets.map(levels)).toEqual(['low→high', 'high→low']);
    expect(t.sets.sets[0]!.claims.events[USER_RISK_CHANGE]!.subject).toEqual({
      user: { format: 'email', email: 'ann@acme.test' },
    });
    await waitFor(() => states(t.actions), {
      until: (got) => got.includes('clear_sessions:done'),
      what: 'the action done',
    });
    expect(states(t.actions)).toEqual(['clear_sessions:requested', 'clear_sessions:started', 'clear_sessions:done']);
    expect(t.users.count('clear_sessions', '00uann')).toBe(1);
    expect(t.users.users.get('00uann')!.sessions).toBe(0);
    expect(t.users.users.get('00ubob')!.sessions).toBe(2);
    expect(t.deliveries.values().map((d) => [d.result, d.current_level])).toEqual([
      ['accepted', 'high'],
      ['accepted', 'none'],
    ]);

    // A restart resumes from the checkpoints: the next change goes out, nothing before it again.
    await t.restart();
    const bob = riskChange(t.org, { id: '00ubob', login: 'bob@acme.test' }, 'none', 'medium');
    await t.append(bob);
    await waitFor(() => t.sets.distinct, { until: (n) => n === 3, what: "bob's SET" });
    expect(t.sets.accepted).toHaveLength(3);
    expect(t.users.count('clear_sessions')).toBe(1);
    expect(t.sim.violations).toEqual([]);
  }, 60_000);

  it('retries a 5xx with the same bytes; dead-letters a refused SET with its err and goes on', async () => {
    const t = await setUp({ audience: 'https://someone-else.test' });
    t.sets.failNext(3);
    const first = riskChange(t.org, { id: '00uann' }, 'none', 'high');
    await t.append(first);
    // The dead letter and the delivery record are one atomic step; the counters move once that step resolves, which
    // a watcher of the topics can see before: wait for all three, not the first one seen.
    await waitFor(
      () =>
        t.letters.records.length === 1 && t.deliveries.records.length === 1 && t.running()!.counters.setsRefused === 1,
      {
        what: 'the refused SET dead-lettered, its delivery recorded and counted',
        seen: () => ({
          't.letters.records.length': t.letters.records.length,
          't.deliveries.records.length': t.deliveries.records.length,
          't.running()!.counters.setsRefused': t.running()!.counters.setsRefused,
        }),
      },
    );
    // 3 × 503, then the signature, issuer and all check out but the audience is not this receiver's.
    expect(t.sets.refused.map((r) => r.err)).toEqual(['invalid_audience']);
    const letter = t.letters.records[0]!;
    expect(letter.value.toString()).toBe(t.sets.refused[0]!.token);
    expect(letter.headers['hooklog-reason']).toMatch(
      /^IDP_REQUEST_REJECTED: SET [0-9a-f]{32} refused by org .*: 400 invalid_audience/,
    );
    expect(letter.headers['hooklog-error-code']).toBe('IDP_REQUEST_REJECTED');
    const delivered = t.deliveries.values();
    // Three pushes answered 503 (the client's two retries, then the delivery offered again) and the refused one.
    expect(delivered).toMatchObject([{ result: 'refused', err: 'invalid_audience', status: 400, attempts: 4 }]);
    // Every push of that change carried the same bytes.
    const pushes = t.sim.requests.filter((r) => r.path === '/security/api/v1/security-events');
    expect(pushes.map((r) => r.status)).toEqual([503, 503, 503, 400]);
    expect(new Set(t.sets.pushes)).toEqual(new Set([t.sets.refused[0]!.token]));
    expect(t.running()!.counters.setsRefused).toBe(1);
    const metrics = (await renderMetrics()).body;
    expect(metrics).toContain(
      `hooklog_ssf_sets_total{org="${t.org}",result="failed",err="invalid_audience",service="hooklog"} 1`,
    );
    expect(metrics).toContain(`hooklog_ssf_set_retries_total{org="${t.org}",service="hooklog"}`);
    // The refusal does not hold the org's partition: the next change is pushed (and refused) too.
    await t.append(riskChange(t.org, { id: '00ubob' }, 'none', 'medium'));
    await waitFor(() => t.deliveries.records.length, { until: (n) => n === 2, what: 'the next change pushed' });
  }, 60_000);
});
