/**
 * Trying the console as docs/analyze/console.md shows it, in two processes: the
 * simulated org run as `test/simulated-org/main.ts --oidc` (it is the OpenID
 * Connect provider too), and the built CLI (`node bin/hooklog.js start`) with
 * examples/console/hooklog.yaml as written, only its ports, data directory and
 * session secret from the environment. Its default users sign in through the
 * real flow (hooklog's login redirect, the org's login form, the code
 * exchanged with PKCE, the ID token verified) and /console/api/me says who they
 * are and what they may do; the `console:` section the org prints is the
 * example's. Built once for the file (or by .ci/run, HOOKLOG_TEST_BUILT=1).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../cli/config/load.js';
import { freePort, signIn } from '../../console/testing.js';
import { DEFAULT_USERS } from '../simulated-org/oidc-options.js';
import { REPO_DIR, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const EXAMPLE = 'examples/console/hooklog.yaml';
const SESSION_SECRET = 'console-try-session-secret-0123456789';

let org: { child: ChildProcess; output: () => string; url: string } | undefined;
let hooklog: Daemon | undefined;
let env: NodeJS.ProcessEnv;

/** `npx tsx test/simulated-org/main.ts …` as a process; resolves once it has printed everything it prints at start. */
async function startOrg(args: readonly string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/simulated-org/main.ts', ...args], {
    cwd: REPO_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const started = { child, output: () => out, url: '' };
  org = started;
  // An org that exits while starting (a refused option) fails the wait at once, with its output.
  const exited = new Promise<never>((_, fail) =>
    child.once('exit', (code) => fail(new Error(`the simulated org exited with ${code}:\n${out}`))),
  );
  exited.catch(() => undefined);
  const printed = await Promise.race([
    waitFor(() => out, {
      until: (o) => /simulated org at (http\S+)/.test(o) && o.includes('grants:') && o.endsWith('}\n'),
      what: 'the simulated org to print its URL and console section',
      timeoutMs: 60_000,
    }),
    exited,
  ]);
  return { ...started, url: /simulated org at (http\S+)/.exec(printed)![1]! };
}

beforeAll(async () => {
  if (process.env.HOOKLOG_TEST_BUILT !== '1')
    await promisify(execFile)('npm', ['run', 'build'], { cwd: REPO_DIR, timeout: 300_000 });
  const port = await freePort();
  org = await startOrg([
    '--oidc',
    '--port',
    '0',
    '--events',
    '200',
    '--live-per-s',
    '0',
    '--console-url',
    `http://127.0.0.1:${port}`,
  ]);
  env = {
    PORT: String(port),
    ORG_URL: org.url,
    DATA_DIR: join(mkdtempSync(join(tmpdir(), 'hooklog-console-try-')), 'data'),
    CONSOLE_SESSION_SECRET: SESSION_SECRET,
  };
  hooklog = await startDaemon(['-c', EXAMPLE], env, 90_000, { built: true });
}, 420_000);

afterAll(async () => {
  if (hooklog) await stopDaemon(hooklog);
  if (org && org.child.exitCode === null) {
    const exited = new Promise<void>((r) => org!.child.once('exit', () => r()));
    org.child.kill('SIGINT');
    await exited;
  }
});

describe('trying the console: the simulated org with --oidc, and the built CLI with examples/console/hooklog.yaml', () => {
  it("signs the default analyst in through the org's OpenID Connect flow; /console/api/me says who and what", async () => {
    const [ada] = DEFAULT_USERS;
    const session = await signIn({ url: hooklog!.url }, ada!);
    const me = await fetch(`${hooklog!.url}/console/api/me`, { headers: { cookie: session.cookie } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({
      kind: 'user',
      name: 'ada@example.com',
      role: 'analyst',
      orgs: ['simulated'],
      csrf: session.csrf,
    });
  });

  it('the default viewer signs in as a viewer of the same org; without a session /me answers 401', async () => {
    const session = await signIn({ url: hooklog!.url }, DEFAULT_USERS[1]!);
    const me = await fetch(`${hooklog!.url}/console/api/me`, { headers: { cookie: session.cookie } });
    expect(await me.json()).toMatchObject({ name: 'vic@example.com', role: 'viewer', orgs: ['simulated'] });
    expect((await fetch(`${hooklog!.url}/console/api/me`)).status).toBe(401);
  });

  it("a wrong password is refused on the org's login form", async () => {
    await expect(signIn({ url: hooklog!.url }, { ...DEFAULT_USERS[0]!, password: 'not-it' })).rejects.toThrow(
      /the org's login answered 401/,
    );
  });

  it("shows the org's polled history: the example rule's alerts on its failed sign-ins, to a viewer too", async () => {
    const session = await signIn({ url: hooklog!.url }, DEFAULT_USERS[1]!);
    const alerts = await waitFor(
      async () => {
        const res = await fetch(`${hooklog!.url}/console/api/alerts?org=simulated`, {
          headers: { cookie: session.cookie },
        });
        return ((await res.json()) as { alerts: Array<{ rule_id: string }> }).alerts;
      },
      { until: (a) => a.length > 0, what: 'alerts of the simulated org in the console', timeoutMs: 60_000 },
    );
    expect(new Set(alerts.map((a) => a.rule_id))).toEqual(new Set(['failed-sign-in']));
  });

  it("the console section the org prints is the example's, as hooklog reads both", () => {
    const printed = /^console:\n(?: {2}.*\n)+/m.exec(org!.output())?.[0];
    expect(printed, org!.output()).toBeDefined();
    const fromOrg = parseYaml(printed!.replace('${CONSOLE_SESSION_SECRET}', SESSION_SECRET)) as {
      console: Record<string, unknown>;
    };
    const example = loadConfig(join(REPO_DIR, EXAMPLE), env).config.console;
    expect(fromOrg.console).toEqual({
      enabled: example.enabled,
      public_url: example.public_url,
      session_secret: SESSION_SECRET,
      oidc: { issuer: example.oidc!.issuer, client_id: example.oidc!.client_id, grants: example.oidc!.grants },
    });
  });
});
