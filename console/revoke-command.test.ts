/**
 * `hooklog console revoke --user` beside a running `hooklog start` on the
 * embedded log (which that process holds): the built CLI hands the revocation
 * to it through the admin socket, and the user's session is refused at once;
 * another user's holds. (On Kafka the CLI appends itself: fleet.test.ts.)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../test/support/cli.js';
import { waitFor } from '../test/support/wait.js';
import { consoleConfigInput, freePort, signIn, startSimulatedIdp, USERS } from './testing.js';

let daemon: Daemon | undefined;
let idp: Awaited<ReturnType<typeof startSimulatedIdp>> | undefined;
afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  await idp?.sim.stop();
});

describe('hooklog console revoke on the embedded log', () => {
  it("ends the user's sessions through the running hooklog", async () => {
    const port = await freePort();
    idp = await startSimulatedIdp([`http://127.0.0.1:${port}/console/auth/callback`]);
    const input = consoleConfigInput({ port, issuer: idp.sim.url });
    const configPath = join(String(input.data_dir), '..', 'hooklog.yaml');
    writeFileSync(configPath, stringify(input));
    daemon = await startDaemon(['--config', configPath], {}, 90_000, { built: true });
    const w = { url: daemon.url };
    const alice = await signIn(w, USERS.alice);
    const vera = await signIn(w, USERS.vera);
    const me = async (s: { cookie: string }) =>
      (await fetch(`${w.url}/console/api/me`, { headers: { cookie: s.cookie } })).status;
    expect([await me(alice), await me(vera)]).toEqual([200, 200]);

    const ran = await runCli(
      ['--config', configPath, 'console', 'revoke', '--user', USERS.alice.login],
      {},
      undefined,
      {
        built: true,
      },
    );
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    await waitFor(() => me(alice), {
      until: (s) => s === 401,
      what: "alice's session after the revoke",
      timeoutMs: 5000,
    });
    expect(await me(vera)).toBe(200);

    // A value that is no login is refused before anything is appended.
    const bad = await runCli(['--config', configPath, 'console', 'revoke', '--user', 'x\u202Ey'], {}, undefined, {
      built: true,
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--user must be a login or user id of 1 to 256 printable characters/);
  }, 180_000);
});
