/**
 * `hooklog search --saved <name>` and `--list-saved`: a search saved in the console of a running hooklog
 * (embedded stream and ClickHouse, so the CLI goes through its admin socket) runs from the terminal with its
 * filter, range, columns and facets; the list is the org's own; a name the org does not have is a clear error.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  consoleConfigInput,
  failedSignIn,
  freePort,
  KEY_A,
  ORG_A,
  ORG_B,
  startSimulatedIdp,
} from '../console/testing.js';
import { delivery } from '../test/fixtures/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../test/support/cli.js';
import { postDelivery } from '../test/support/hooklog-config.js';
import { waitFor } from '../test/support/wait.js';

let daemon: Daemon | undefined;
let idp: Awaited<ReturnType<typeof startSimulatedIdp>> | undefined;
let configPath: string;
const VICTIM = 'frank@a.example';

beforeAll(async () => {
  const port = await freePort();
  idp = await startSimulatedIdp([`http://127.0.0.1:${port}/console/auth/callback`]);
  const input = consoleConfigInput({ port, issuer: idp.sim.url });
  configPath = join(String(input.data_dir), '..', 'hooklog.yaml');
  writeFileSync(configPath, stringify(input));
  daemon = await startDaemon(['--config', configPath]);
}, 180_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  await idp?.sim.stop();
});

const cli = (...args: string[]) => runCli(['--config', configPath, ...args]);
const save = async (body: object) => {
  const res = await fetch(`${daemon!.url}/console/api/saved-searches`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { id: string }).id;
};

describe('hooklog search with saved searches', () => {
  it("runs an org's saved search and lists the org's saved searches", async () => {
    const events = [
      ...[1, 2].map(() => failedSignIn(VICTIM, { ip: '192.0.2.44' })),
      failedSignIn('grace@a.example', { ip: '198.51.100.9' }),
    ];
    expect(await postDelivery(daemon!.url, `hook-${ORG_A}`, delivery(ORG_A, `hook-${ORG_A}`, events))).toBe(204);
    await waitFor(async () => (await cli('search', '', '--org', ORG_A, '--since', '1d', '-f', 'json')).stdout, {
      until: (out) => out.startsWith('{') && (JSON.parse(out) as { rows: unknown[] }).rows.length === 3,
      what: "org A's three events through the CLI",
      timeoutMs: 60_000,
    });
    const id = await save({
      org: ORG_A,
      name: 'Frank, failing',
      filter: `actor.alternateId eq "${VICTIM}"`,
      range: { last: '7d' },
      fields: ['client.ipAddress'],
      facets: ['client.ipAddress'],
    });

    const ran = await cli('search', '--saved', 'Frank, failing', '--org', ORG_A, '-f', 'json');
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    const page = JSON.parse(ran.stdout) as {
      columns: string[];
      rows: Array<Record<string, unknown>>;
      facets: Array<{ field: string; values: Array<{ value: string; n: number }> }>;
    };
    expect(page.rows).toHaveLength(2);
    expect(page.columns).toContain('client.ipAddress');
    expect(page.columns).not.toContain('actor.alternateId');
    expect(page.facets).toEqual([{ field: 'client.ipAddress', values: [{ value: '192.0.2.44', n: 2 }] }]);

    const listed = await cli('search', '--list-saved', '--org', ORG_A, '-f', 'json');
    expect(listed.code).toBe(0);
    expect(
      (JSON.parse(listed.stdout) as Array<{ id: string; name: string; range: unknown }>).map((s) => [
        s.id,
        s.name,
        s.range,
      ]),
    ).toEqual([[id, 'Frank, failing', { last: '7d' }]]);
    const table = await cli('search', '--list-saved', '--org', ORG_A);
    expect(table.stdout).toContain('last 7 days');
    // Another org's list does not hold it, and its name is not another org's saved search.
    expect(JSON.parse((await cli('search', '--list-saved', '--org', ORG_B, '-f', 'json')).stdout)).toEqual([]);
    const elsewhere = await cli('search', '--saved', 'Frank, failing', '--org', ORG_B);
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toContain('no saved search "Frank, failing" in org "org-b" (it has none)');
    const both = await cli('search', 'eventType eq "x"', '--saved', 'Frank, failing', '--org', ORG_A);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('give a filter or --saved <name>, not both');
  }, 240_000);
});
