/**
 * `hooklog search` end to end (the built CLI with HOOKLOG_CLI=built): events
 * delivered to a running hooklog on embedded ClickHouse are found through its
 * admin socket, page by page, newest first; a hostile value prints as text
 * (no escape sequence reaches the terminal, no formula reaches a spreadsheet);
 * a mistyped filter is pointed at, an unknown field gets a suggestion.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../test/support/cli.js';
import { postDelivery, storeRows, writeTestConfig } from '../test/support/hooklog-config.js';
import { delivery } from '../test/fixtures/index.js';
import { waitFor } from '../test/support/wait.js';

let daemon: Daemon | undefined;
afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
});

describe('hooklog search', () => {
  it('searches through the running hooklog: pages, formats, hostile values, mistakes', async () => {
    const inst = writeTestConfig();
    daemon = await startDaemon(['--config', inst.configPath]);
    const now = Date.now();
    const uuid = (i: number) => `00000000-0000-4000-8000-00000000000${i}`;
    const events = [1, 2, 3].map((i) => ({
      uuid: uuid(i),
      published: new Date(now - i * 60_000).toISOString(),
      eventType: 'user.account.lock',
      actor: { alternateId: i === 1 ? '=HYPERLINK("http://evil.example","x")' : `user${i}@example.com` },
      client: { ipAddress: '198.51.100.7' },
      displayMessage: 'locked \u001b[31mred\u001b[0m \u202eecnarf',
    }));
    const noise = { ...events[0]!, uuid: uuid(9), eventType: 'user.session.start' };
    expect(await postDelivery(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, [...events, noise]))).toBe(204);
    await waitFor(
      async () => (await storeRows(inst.configPath, `SELECT count() AS n FROM events WHERE org = '${inst.org}'`))[0]?.n,
      { until: (n) => n === '4', timeoutMs: 60_000, what: 'the events in ClickHouse' },
    );
    const cli = (...args: string[]) => runCli(['--config', inst.configPath, ...args]);
    const filter = 'eventType eq "USER.ACCOUNT.LOCK" and client.ipAddress sw "198.51."';

    const json = await cli('search', filter, '--org', inst.org, '--since', '1d', '--facets', 'eventType', '-f', 'json');
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const page = JSON.parse(json.stdout) as {
      rows: Array<{ uuid: string }>;
      facets: Array<{ field: string; values: unknown[] }>;
    };
    expect(page.rows.map((r) => r.uuid)).toEqual([uuid(1), uuid(2), uuid(3)]);
    expect(page.facets).toEqual([{ field: 'eventType', values: [{ value: 'user.account.lock', n: 3 }] }]);

    // Two pages of two: the cursor goes to stderr, the second page starts after it.
    const first = await cli('search', filter, '--org', inst.org, '--since', '1d', '--limit', '2', '-f', 'csv');
    expect(first.code).toBe(0);
    const after = /^more: --after (\S+)$/m.exec(first.stderr)?.[1];
    expect(after, first.stderr).toBeDefined();
    const second = await cli('search', filter, '--org', inst.org, '--since', '1d', '--after', after!, '-f', 'json');
    expect((JSON.parse(second.stdout) as { rows: Array<{ uuid: string }> }).rows.map((r) => r.uuid)).toEqual([uuid(3)]);
    // CSV: a formula-looking value opens as text; controls are drawn.
    const csv = first.stdout.split('\r\n');
    expect(csv[0]).toBe('published,uuid,eventType,actor.alternateId,client.ipAddress,outcome.result,displayMessage');
    expect(first.stdout).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
    expect(first.stdout).not.toContain('\u001b');

    const table = await cli('search', filter, '--org', inst.org, '--since', '1d');
    expect(table.code).toBe(0);
    expect(table.stdout).not.toContain('\u001b');
    expect(table.stdout).not.toContain('\u202e');
    expect(table.stdout).toContain('⟨U+001B⟩[31mred');
    expect(table.stdout).toContain('(3 rows)');

    const typo = await cli('search', 'eventType eq "x" and clent.ipAddress pr', '--org', inst.org, '--since', '1d');
    expect(typo.code).toBe(1);
    expect(typo.stderr).toBe(
      '  eventType eq "x" and clent.ipAddress pr\n' +
        '                       ^\n' +
        'hooklog: QUERY_INVALID: filter, column 22: unknown field "clent.ipAddress": did you mean "client.ipAddress"?\n',
    );
    const syntax = await cli('search', 'eventType eq', '--org', inst.org, '--since', '1d');
    expect(syntax.code).toBe(1);
    expect(syntax.stderr).toContain('hooklog: QUERY_INVALID: filter, column 13: expected a value, got the end\n');
  }, 120_000);
});
