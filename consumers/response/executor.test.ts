/**
 * Response actions on real parts (Kafka, the simulated org's user actions):
 * what each mode does, approval, the service's refusals kept whole, and a stop
 * between `started` and the result (the crash the records must survive): a
 * repeatable action is repeated once, any other waits as `uncertain` until
 * approved.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Collector } from '../../test/simulated-org/harness.js';
import { HooklogError } from '../../platform/errors.js';
import { renderMetrics } from '../../platform/metrics.js';
import type { Transactor } from '../../platform/stream/types.js';
import { waitFor } from '../../test/support/wait.js';
import { actionStreamRecord, type ActionRecord } from './records.js';
import { cleanUp, setUp } from './testing/harness.js';
import { riskChange } from './testing.js';

afterEach(cleanUp);

const ann = { id: '00uann', login: 'ann@acme.test' };
const steps = (c: Collector) => c.values().map((v) => `${String(v.action)}:${String(v.state)}`);
const managementCalls = (t: Awaited<ReturnType<typeof setUp>>) =>
  t.sim.requests.filter((r) => r.path.startsWith('/api/v1/users') || r.path.startsWith('/api/v1/groups'));
/** What `hooklog actions approve` appends. */
const approval = (a: Record<string, unknown>, by = 'sec-oncall'): ActionRecord => ({
  action_id: String(a.action_id),
  org: String(a.org),
  state: 'approved',
  at: new Date().toISOString(),
  by,
});

describe('response actions', () => {
  it('dry_run records every would-be action and makes no management call; the SET still goes', async () => {
    const t = await setUp({
      triggers: {
        on_level: { high: ['clear_sessions', 'suspend'] },
        on_rule: { 'impossible-travel': ['reset_factors'] },
      },
      org: { actions: { mode: 'dry_run', allow: ['clear_sessions', 'suspend'] } },
    });
    await t.append(riskChange(t.org, ann, 'none', 'high'));
    await waitFor(() => t.actions.records.length === 3 && t.sets.distinct === 1, {
      what: 'decisions and the SET',
      seen: () => ({ 't.actions.records.length': t.actions.records.length, 't.sets.distinct': t.sets.distinct }),
    });
    expect(steps(t.actions)).toEqual(['clear_sessions:dry_run', 'suspend:dry_run', 'reset_factors:not_allowed']);
    expect(t.actions.values()[0]).toMatchObject({
      user_id: '00uann',
      user_login: 'ann@acme.test',
      note: 'dry run: no management call',
    });
    // Let a later change pass through both consumers: still no call.
    await t.append(riskChange(t.org, ann, 'high', 'none', { cause: 'expiry' }));
    await waitFor(() => t.sets.distinct, { until: (n) => n === 2, what: 'the second SET' });
    expect(managementCalls(t)).toEqual([]);
  }, 60_000);

  it('off records nothing', async () => {
    const t = await setUp({
      triggers: { on_level: { high: ['clear_sessions'] } },
      org: { actions: { mode: 'off' } },
    });
    await t.append(riskChange(t.org, ann, 'none', 'high'), riskChange(t.org, ann, 'high', 'none', { cause: 'expiry' }));
    await waitFor(() => t.sets.distinct, { until: (n) => n === 2, what: 'both SETs' });
    expect(t.actions.records).toEqual([]);
    expect(managementCalls(t)).toEqual([]);
  }, 60_000);

  it('holds an action for approval, runs it once approved (once, however often approved), and keeps a refusal whole', async () => {
    const t = await setUp({
      triggers: { on_level: { high: ['clear_sessions', 'suspend'] } },
      org: {
        security_events: { enabled: false },
        actions: { mode: 'on', allow: ['clear_sessions', 'suspend'], require_approval: ['suspend'] },
      },
    });
    await t.append(riskChange(t.org, ann, 'none', 'high'));
    await waitFor(() => steps(t.actions), {
      until: (got) => got.includes('clear_sessions:done'),
      what: 'clear_sessions done',
    });
    expect(steps(t.actions)).toEqual([
      'clear_sessions:requested',
      'suspend:awaiting_approval',
      'clear_sessions:started',
      'clear_sessions:done',
    ]);
    expect(t.users.count('suspend')).toBe(0);
    const waiting = t.actions.values().find((v) => v.state === 'awaiting_approval')!;
    await t.stream.append(t.topics.actions, [actionStreamRecord(approval(waiting))]);
    await waitFor(() => steps(t.actions), { until: (got) => got.includes('suspend:done'), what: 'suspend done' });
    expect(t.actions.values().find((v) => v.state === 'started' && v.action === 'suspend')).toMatchObject({
      by: 'sec-oncall',
      attempt: 1,
    });
    expect(t.users.users.get('00uann')!.status).toBe('SUSPENDED');
    // Approved again: nothing waits, nothing runs.
    await t.stream.append(t.topics.actions, [actionStreamRecord(approval(waiting, 'someone-else'))]);
    // A second user's finding, whose suspend is approved while the user is already suspended: the service says no.
    t.users.users.get('00ubob')!.status = 'SUSPENDED';
    await t.append(riskChange(t.org, { id: '00ubob' }, 'none', 'high'));
    await waitFor(() => steps(t.actions).filter((s) => s === 'suspend:awaiting_approval').length, {
      until: (n) => n === 2,
      what: "bob's suspend",
    });
    const bobs = t.actions
      .values()
      .filter((v) => v.state === 'awaiting_approval')
      .at(-1)!;
    await t.stream.append(t.topics.actions, [actionStreamRecord(approval(bobs))]);
    await waitFor(() => steps(t.actions), {
      until: (got) => got.includes('suspend:failed'),
      what: "bob's suspend refused",
    });
    expect(t.actions.values().find((v) => v.state === 'failed')).toMatchObject({
      user_id: '00ubob',
      status: 400,
      error_code: 'E0000001',
      error: 'E0000001: Api validation failed: suspend (Cannot suspend a user that is not active)',
    });
    expect(t.users.count('suspend')).toBe(1);
    expect(t.sim.violations).toEqual([]);
    const metrics = (await renderMetrics()).body;
    for (const [action, result] of [
      ['suspend', 'awaiting_approval'],
      ['suspend', 'approved'],
      ['suspend', 'done'],
      ['suspend', 'failed'],
      ['clear_sessions', 'done'],
    ])
      expect(metrics).toMatch(
        new RegExp(
          `hooklog_response_actions_total\\{org="${t.org}",action="${action}",result="${result}",service="hooklog"\\} [1-9]`,
        ),
      );
  }, 60_000);

  it('after a stop between started and the result: repeats clear_sessions once, holds expire_password as uncertain until approved', async () => {
    const t = await setUp({
      triggers: { on_level: { high: ['clear_sessions', 'expire_password'] } },
      org: {
        security_events: { enabled: false },
        actions: { mode: 'on', allow: ['clear_sessions', 'expire_password'] },
      },
    });
    // The first call of each reaches the org as the process goes down: not performed, and no answer recorded.
    const dropped = new Set<string>();
    t.users.beforePerform = (action) => {
      if (dropped.has(action)) return;
      dropped.add(action);
      void t.stop();
      return 'drop';
    };
    await t.append(riskChange(t.org, ann, 'none', 'high'));
    await waitFor(() => dropped, { until: (got) => got.has('clear_sessions'), what: 'the first call' });
    await waitFor(() => t.running(), { until: (v) => v === null, what: 'the stop' });
    await waitFor(() => steps(t.actions).length, { until: (n) => n === 3, what: 'the start recorded, read back' });
    expect(steps(t.actions)).toEqual([
      'clear_sessions:requested',
      'expire_password:requested',
      'clear_sessions:started',
    ]);

    await t.restart();
    await waitFor(() => steps(t.actions), {
      until: (got) => got.includes('clear_sessions:done'),
      what: 'clear_sessions repeated',
    });
    const done = t.actions.values().find((v) => v.state === 'done')!;
    expect(done).toMatchObject({
      attempt: 2,
      note: expect.stringContaining('attempt 1 was started but its result was not recorded'),
    });
    expect(t.users.count('clear_sessions')).toBe(1);
    // expire_password's first call is dropped the same way (a second stop), and then it is not repeated.
    await waitFor(() => t.running(), { until: (v) => v === null, what: 'the second stop' });
    await t.restart();
    await waitFor(() => steps(t.actions), {
      until: (got) => got.includes('expire_password:uncertain'),
      what: 'expire_password uncertain',
    });
    expect(t.users.count('expire_password')).toBe(0);
    const uncertain = t.actions.values().find((v) => v.state === 'uncertain')!;
    expect(uncertain.note).toContain('not repeated automatically');
    await t.stream.append(t.topics.actions, [actionStreamRecord(approval(uncertain))]);
    await waitFor(() => steps(t.actions), {
      until: (got) => got.includes('expire_password:done'),
      what: 'expire_password approved and done',
    });
    expect(t.users.count('expire_password')).toBe(1);
    expect(t.users.users.get('00uann')!.status).toBe('PASSWORD_EXPIRED');
  }, 90_000);

  it('when the record of a result fails (the process still owning the org), records it on the retry and does not call again', async () => {
    // The first write of a `done` fails, as a broker restart or a time-out makes it fail: nothing of it lands.
    let failed = 0;
    const t = await setUp({
      triggers: { on_level: { high: ['clear_sessions'] } },
      org: { security_events: { enabled: false }, actions: { mode: 'on', allow: ['clear_sessions'] } },
      wrapStream: (stream) => {
        const claim = async (owner: string, stillOwner?: () => boolean): Promise<Transactor> => {
          const real = await stream.claim(owner, stillOwner);
          return {
            owner: real.owner,
            close: () => real.close(),
            appendAtomically: (writes) => {
              const done = writes.some((w) => w.records.some((r) => r.value.toString().includes('"state":"done"')));
              if (done && failed++ === 0)
                return Promise.reject(
                  new HooklogError('STREAM_APPEND_FAILED', 'injected: the record of the result failed', {
                    retriable: true,
                  }),
                );
              return real.appendAtomically(writes);
            },
          };
        };
        // Every other method runs on the real stream itself (its private fields are not reachable through a copy).
        return new Proxy(stream, {
          get: (target, name) => {
            if (name === 'claim') return claim;
            const v = Reflect.get(target, name, target) as unknown;
            return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          },
        });
      },
    });
    await t.append(riskChange(t.org, ann, 'none', 'high'));
    await waitFor(() => steps(t.actions), {
      until: (got) => got.includes('clear_sessions:done'),
      what: 'clear_sessions done',
    });
    expect(failed).toBeGreaterThanOrEqual(2); // the injected failure, then the write that landed
    expect(steps(t.actions)).toEqual(['clear_sessions:requested', 'clear_sessions:started', 'clear_sessions:done']);
    expect(t.actions.values().find((v) => v.state === 'done')).toMatchObject({ attempt: 1 });
    expect(t.users.count('clear_sessions')).toBe(1);
  }, 60_000);
});
