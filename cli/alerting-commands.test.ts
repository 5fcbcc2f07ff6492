/**
 * Commands beside a running `hooklog start` on embedded ClickHouse and the
 * embedded log, which admit one process each: `rules test` and `hunt` ask the
 * running process through its admin socket and print what they would alone;
 * `backfill` and `alert`, which need the embedded log itself, say so in one
 * line at once. Before, `rules test` and `hunt` failed with the engine's lock
 * error and `backfill` waited for the lock.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../test/support/cli.js';
import { postDelivery, storeRows, writeTestConfig } from '../test/support/hooklog-config.js';
import { delivery } from '../test/fixtures/index.js';
import { waitFor } from '../test/support/wait.js';

let daemon: Daemon | undefined;
afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
});

describe('commands beside a running embedded hooklog', () => {
  it('rules test and hunt go through the admin socket; backfill and alert refuse in one line', async () => {
    const inst = writeTestConfig({
      extra: {
        // Configured for backfill's sake, never polled (no request leaves the machine).
        orgs: [
          {
            id: 'polled',
            base_url: 'https://polled.example.com',
            auth: { ssws: { token: 'tok' } },
            system_log: { enabled: false },
          },
        ],
      },
    });
    const rules = join(inst.dir, 'rules.yaml');
    writeFileSync(
      rules,
      stringify([{ id: 'locked', title: 'Account locked', detection: 'eventType eq "user.account.lock"' }]),
    );
    daemon = await startDaemon(['--config', inst.configPath]);
    const at = new Date(Date.now() - 60_000).toISOString();
    const events = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b'].map((uuid) => ({
      uuid,
      published: at,
      eventType: 'user.account.lock',
      actor: { alternateId: 'bob@example.com' },
    }));
    expect(await postDelivery(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, events))).toBe(204);
    const cli = (...args: string[]) => runCli(['--config', inst.configPath, ...args]);
    // Polled through the daemon's admin socket, what `hooklog sql` asks, without a process per poll.
    await waitFor(
      async () => (await storeRows(inst.configPath, `SELECT count() AS n FROM events WHERE org = '${inst.org}'`))[0]?.n,
      { until: (n) => n === '2', timeoutMs: 60_000, what: 'the events in ClickHouse' },
    );

    const test = await cli('rules', 'test', rules, '--since', '1d', '-f', 'json');
    expect(test.stderr).toBe('');
    expect(test.code).toBe(0);
    const report = JSON.parse(test.stdout) as { rules: Array<{ rule: string; alerts: number }>; summary: string };
    expect(report.rules).toEqual([{ rule: 'locked', kind: 'match', alerts: 2 }]);
    expect(report.summary).toMatch(/^1 rules over 2 events .*: 2 alerts/);
    // A wrong target is refused as it would be alone, code and all.
    const wrong = await cli('rules', 'test', 'no-such-rule', '--since', '1d');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(
      'hooklog: QUERY_INVALID: no-such-rule: neither a rule file nor the id of a configured rule\n',
    );

    const hunt = await cli('hunt', rules, '--org', inst.org, '--since', '1d', '-f', 'json');
    expect(hunt.code).toBe(0);
    expect((JSON.parse(hunt.stdout) as Array<{ uuid: string }>).map((r) => r.uuid).sort()).toEqual(
      events.map((e) => e.uuid),
    );

    for (const args of [
      ['backfill', '--org', 'polled', '--since', new Date(Date.now() - 3_600_000).toISOString(), '--until', at],
      ['alert'],
    ]) {
      const r = await cli(...args);
      expect(r.code, args[0]).toBe(1);
      expect(r.stderr.trim().split('\n'), args[0]).toEqual([
        expect.stringMatching(
          /^hooklog: STREAM_UNAVAILABLE: the embedded log in .* is held by the hooklog running there/,
        ),
      ]);
    }
  }, 120_000);
});
