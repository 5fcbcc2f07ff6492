/**
 * The response guide's example (examples/response/, docs/respond/response.md), with the built CLI as a user runs
 * it from that directory, `hooklog start` running on HOOKLOG_PORT. A command needs only the secrets it uses
 * (issue 41, item 1): `actions list`, `sql` and `risk` work in a shell without the hooks' secrets; `start` and
 * `check-config` still refuse, naming the variable. Its port is one variable (item 4): the config loads with
 * HOOKLOG_PORT and without (8080), and server.port, the transmitter's issuer and the script's URL follow it.
 * Built once for the file (or by .ci/run, HOOKLOG_TEST_BUILT=1).
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_DIR, runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { freePort } from './hook-registration.js';

const EXAMPLE = join(REPO_DIR, 'examples', 'response');
const SECRETS = { HOOK_SECRET: 'example-hook-secret-0123456789', TOKEN_HOOK_SECRET: 'example-token-secret-0123456789' };
/** A shell without the hooks' secrets (set in the test's own environment or not). */
const WITHOUT_SECRETS = { HOOK_SECRET: undefined, TOKEN_HOOK_SECRET: undefined };

let daemon: Daemon | undefined;
/** The example's copy, and the port its `hooklog start` runs on (HOOKLOG_PORT). */
let dir = '';
let port = '';

beforeAll(async () => {
  if (process.env.HOOKLOG_TEST_BUILT !== '1')
    await promisify(execFile)('npm', ['run', 'build'], { cwd: REPO_DIR, timeout: 300_000 });
  dir = exampleDir();
  port = String(await freePort());
  daemon = await startDaemon(['-c', 'hooklog.yaml'], { ...SECRETS, HOOKLOG_PORT: port }, 90_000, {
    built: true,
    cwd: dir,
  });
}, 420_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
});

/** A copy of the example in a directory of its own, with the SET signing key its README has you make. */
function exampleDir(): string {
  const copy = mkdtempSync(join(tmpdir(), 'hooklog-response-example-'));
  copyFileSync(join(EXAMPLE, 'hooklog.yaml'), join(copy, 'hooklog.yaml'));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(join(copy, 'set-key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return copy;
}

const cli = (args: string[], env: NodeJS.ProcessEnv) =>
  runCli(['-c', 'hooklog.yaml', ...args], env, dir, { built: true });

describe('examples/response with the built CLI', () => {
  it('reads the store without the hooks’ secrets; start and check-config still need them', async () => {
    for (const args of [
      ['actions', 'list', '-f', 'json'],
      ['sql', 'SELECT count() AS n FROM ssf_deliveries', '-f', 'json'],
      ['risk', '--org', 'simulated', '-f', 'json'],
    ]) {
      const r = await cli(args, WITHOUT_SECRETS);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
    }

    const check = await cli(['check-config'], WITHOUT_SECRETS);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain(
      'config key "event_hooks.0.auth.secrets.0": environment variable HOOK_SECRET is not set',
    );
    const start = await cli(['start'], { HOOK_SECRET: SECRETS.HOOK_SECRET, TOKEN_HOOK_SECRET: undefined });
    expect(start.code).toBe(1);
    expect(start.stderr).toContain(
      'config key "token_hooks.0.auth.secrets.0": environment variable TOKEN_HOOK_SECRET is not set',
    );
  }, 180_000);

  it('has one port, HOOKLOG_PORT (default 8080): server.port, the issuer and the script follow it', async () => {
    const loaded = async (env: NodeJS.ProcessEnv) => {
      const r = await cli(['check-config'], { ...SECRETS, ...env });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      const c = parse(r.stdout) as { server: { port: number }; response: { transmitter: { issuer: string } } };
      return { port: c.server.port, issuer: c.response.transmitter.issuer };
    };
    expect(await loaded({ HOOKLOG_PORT: undefined })).toEqual({ port: 8080, issuer: 'http://127.0.0.1:8080' });
    expect(await loaded({ HOOKLOG_PORT: port })).toEqual({ port: Number(port), issuer: `http://127.0.0.1:${port}` });
    // The script posts its trip to the hooklog running on HOOKLOG_PORT, without being told its URL.
    const trip = await promisify(execFile)('sh', [join(EXAMPLE, 'impossible-travel.sh'), 'ann'], {
      cwd: dir,
      env: { ...process.env, ...SECRETS, HOOKLOG_PORT: port },
    });
    expect(trip.stdout.trim()).toBe('204');
  }, 120_000);
});
