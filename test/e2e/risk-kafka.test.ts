/**
 * Risk end to end with the real CLI on the real broker and embedded
 * ClickHouse: events reach `hooklog start` by its event hook, the stateful
 * impossible-travel rule fires, the user's risk goes to high, the change is
 * recorded once (topic and `risk_changes`), the token hook denies that user
 * and not another, and `hooklog risk` says who and why (through the admin
 * socket, as chdb is held by the running process).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { riskTravelEvents, riskTravelRules } from '../../consumers/alerting/testing/events.js';
import { HOOK_SECRET, postToken, sampleRequest } from '../../receivers/token-hook/testing.js';
import { delivery } from '../fixtures/index.js';
import { kafkaBrokers } from '../kafka/inject.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { randomName, waitFor } from '../support/wait.js';

describe('risk from a finding to the sign-in path (Kafka, real CLI)', () => {
  let daemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
  });

  it('a stateful rule fires, the user goes to high once, the token hook denies that user only, hooklog risk says why', async () => {
    const suffix = randomName('r');
    // The token hook serves the event hook's org, which writeTestConfig names: given by the environment.
    const withHook = writeTestConfig({
      kafkaBrokers: kafkaBrokers(),
      extra: {
        alerting: {
          group: `alerting-${suffix}`,
          rules: riskTravelRules('24h'),
          allowed_lateness_ms: 0,
          max_batch_wait_ms: 50,
        },
        token_hooks: [
          {
            id: 'th',
            org: '${HOOKLOG_TEST_ORG}',
            auth: { type: 'header', secrets: [HOOK_SECRET] },
            rules: [
              {
                name: 'deny-high',
                when: { risk: { user: ['high'] } },
                actions: [{ deny: { error_summary: 'Your account is at risk' } }],
              },
            ],
          },
        ],
      },
    });
    const env = { HOOKLOG_TEST_ORG: withHook.org };
    daemon = await startDaemon(['--config', withHook.configPath], env);
    const org = withHook.org;

    const now = Date.now();
    const events = riskTravelEvents(org, [{ user: 'ann', tripAt: now - 600_000 }], now - 1000).map(
      (r) => JSON.parse(r.value.toString()) as object,
    );
    expect(await postDelivery(daemon.url, withHook.hookId, delivery(org, withHook.hookId, events))).toBe(204);

    const ask = (user: string) => {
      const req = sampleRequest();
      req.data.context.user.id = user;
      return postToken(daemon!.url, req);
    };
    const denied = await waitFor(() => ask('00uann'), {
      until: (r) => r.status === 200 && JSON.stringify(r.json).includes('at risk'),
      timeoutMs: 60_000,
      what: 'ann denied',
      seen: () => `hooklog's output: ${daemon!.output().slice(-2000)}`,
    });
    expect(denied.json).toEqual({ error: { errorSummary: 'Your account is at risk' } });
    expect((await ask('00ubob')).status).toBe(204);

    const cli = async (...args: string[]) => {
      const r = await runCli(['--config', withHook.configPath, ...args], env);
      if (r.code !== 0) throw new Error(r.stderr);
      return r.stdout;
    };
    const report = JSON.parse(await cli('risk', '--org', org, '-f', 'json')) as {
      users: Array<Record<string, string>>;
    };
    expect(report.users).toHaveLength(1);
    expect(report.users[0]).toMatchObject({
      user_id: '00uann',
      login: `ann@${org}.example`,
      level: 'high',
      rule: 'travel',
      reason: 'Sign-ins too far apart for the time between them',
      until: new Date(now - 600_000 + 86_400_000).toISOString(),
    });
    // The change, once, in ClickHouse (the sink's risk-changes pipeline).
    const history = await waitFor(
      async () => {
        const r = JSON.parse(await cli('risk', '--org', org, '--user', `ann@${org}.example`, '-f', 'json')) as {
          changes: Array<Record<string, string>>;
        };
        return r.changes;
      },
      { until: (changes) => changes.length > 0, timeoutMs: 30_000, what: 'the change in risk_changes' },
    );
    expect(history.map((c) => [c.previous, c.current, c.cause, c.rule])).toEqual([
      ['none', 'high', 'finding', 'travel'],
    ]);
    const counts = JSON.parse(
      await cli('sql', 'SELECT count() AS n, uniqExact(change_id) AS ids FROM risk_changes', '-f', 'json'),
    ) as Array<{ n: string; ids: string }>;
    expect(counts).toEqual([{ n: '1', ids: '1' }]);
    const table = await cli('risk', '--org', org);
    expect(table).toMatch(/00uann .*│ high .*│ travel/);
  }, 180_000);
});
