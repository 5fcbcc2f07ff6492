/**
 * The product users run: `npm run build`, then `node bin/hooklog.js` — not
 * the TypeScript sources every other test runs. One `hooklog start` with every
 * config section at once (test/e2e/product.ts: event and token hooks, an org
 * polled from the simulated org, alerting with a rule file, Sigma rules, the
 * built-in content and a webhook, the query API, the response, the console
 * signed in through the simulated org's OIDC, an SSF receiver, hook
 * registration, roles and the rest: every top-level key) must become ready,
 * take a delivery, raise the alerts and answer queries; `check-config` must
 * pass the same config and print none of its secrets, nor the running process
 * log any. (That the commands the documentation shows are this CLI's is
 * test/docs.test.ts's: it reads the same command tree, cli/main.ts.) Built
 * once for the file (or by .ci/run just before, HOOKLOG_TEST_BUILT=1).
 *
 * It found the built CLI dying at start with any `alerting:` section (the
 * built-in rule file was looked up inside dist/, which the build never fills).
 *
 * The build is one file (cli/build.ts: a restart's first answer waited for some 850 module files to load, issue
 * 38): the last test runs commands of the built CLI and lists every file they load.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { configJsonSchema, configSchema } from '../../cli/config/schema.js';
import { SimulatedOrg } from '../simulated-org/index.js';
import { REPO_DIR, runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { freePort } from './hook-registration.js';
import {
  productConfig,
  SECRETS,
  SECTIONS,
  SSWS_TOKEN,
  startWebhookReceiver,
  type Product,
  type WebhookReceiver,
} from './product.js';

const built = { built: true } as const;
let daemon: Daemon | undefined;
let sim: SimulatedOrg | undefined;
let webhook: WebhookReceiver | undefined;
/** What sections started for themselves (product.ts `cleanup`), closed after hooklog stops. */
const closers: Array<() => Promise<void>> = [];

// .ci/run builds the tree (npm run build) before it runs the tests, and says so with HOOKLOG_TEST_BUILT=1: building
// it again here would take a minute of the run and make the same files.
beforeAll(async () => {
  if (process.env.HOOKLOG_TEST_BUILT === '1') return;
  await promisify(execFile)('npm', ['run', 'build'], { cwd: REPO_DIR, timeout: 300_000 });
}, 320_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  for (const close of closers) await close();
  await sim?.stop();
  await webhook?.close();
});

describe('the built CLI (npm run build; node bin/hooklog.js)', () => {
  it('start with every config section: ready, a delivery, alerts, queries; check-config agrees', async () => {
    sim = await SimulatedOrg.start({ auth: { ssws: [SSWS_TOKEN] } });
    webhook = await startWebhookReceiver();
    const dir = mkdtempSync(join(tmpdir(), 'hooklog-product-'));
    const setup = {
      dir,
      suffix: Math.random().toString(36).slice(2, 8),
      sim,
      webhook,
      port: await freePort(),
      cleanup: (close: () => Promise<void>) => void closers.push(close),
    };
    const config = await productConfig(setup);
    // Every top-level key of the schema is in some section: a new one fails here until it has its own.
    expect(Object.keys(config).sort()).toEqual(Object.keys(configSchema.shape).sort());
    const configPath = join(dir, 'hooklog.yaml');
    writeFileSync(configPath, stringify(config));
    const cli = (...args: string[]) => runCli(['--config', configPath, ...args], {}, REPO_DIR, built);

    const check = await cli('check-config');
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/^# config OK/);
    for (const s of SECRETS) expect(check.stdout).not.toContain(s);

    daemon = await startDaemon(['--config', configPath], {}, 90_000, built);
    expect(daemon.url).toBe(`http://127.0.0.1:${setup.port}`);
    const running = daemon;
    const product: Product = {
      ...setup,
      url: daemon.url,
      cli,
      output: () => running.output(),
      sql: async <T>(query: string) => {
        const r = await cli('sql', query, '-f', 'json');
        if (r.code !== 0) throw new Error(r.stderr);
        return JSON.parse(r.stdout) as T[];
      },
    };
    for (const section of SECTIONS) {
      try {
        await section.check?.(product);
      } catch (err) {
        throw new Error(
          `section ${section.name}: ${(err as Error).message}\n--- hooklog's output ---\n${daemon.output().slice(-6000)}`,
          {
            cause: err,
          },
        );
      }
    }
    // The banner names every route this process serves with its URL (issue 41, item 3), and each answers.
    const c = configSchema.parse(config);
    const paths = [
      '/healthz',
      '/readyz',
      ...c.event_hooks.map((h) => `/hooks/events/${h.id}`),
      ...c.token_hooks.map((h) => `/hooks/token/${h.id}`),
      ...c.ssf_receivers.map((r) => `/hooks/ssf/${r.id}`),
      '/.well-known/ssf-configuration',
      '/.well-known/jwks.json',
      '/api/queries',
      '/console',
      '/metrics',
    ];
    const bannerLines = daemon.output().split('\n');
    const answers: Record<string, { inBanner: boolean; status: number }> = {};
    for (const path of paths) {
      const url = `${daemon.url}${path}`;
      const res = await fetch(url, { redirect: 'manual' });
      await res.body?.cancel();
      answers[path] = { inBanner: bannerLines.some((l) => l.split(/\s+/).includes(url)), status: res.status };
    }
    for (const path of paths) expect({ path, ...answers[path] }).toMatchObject({ path, inBanner: true });
    for (const path of paths) expect({ path, status: answers[path]!.status }).not.toEqual({ path, status: 404 });
    expect(daemon.output()).not.toMatch(/"level":(50|60)/);
  }, 240_000);

  it("is one file: --version, check-config and start load no module file but bin/hooklog.js and dist/hooklog.js (chdb on the store's thread)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hooklog-loaded-'));
    const listed = join(dir, 'loaded.txt');
    // Every file the process loads: ES modules through a load hook (run in the hooks' thread, so it writes the
    // list itself), CommonJS ones (require) where Node's loader resolves them.
    const hooks = join(dir, 'hooks.mjs');
    writeFileSync(
      hooks,
      `import { appendFileSync } from 'node:fs';
let out;
export function initialize(data) { out = data.out; }
export async function load(url, context, next) { appendFileSync(out, url + '\\n'); return next(url, context); }
`,
    );
    const preload = join(dir, 'preload.mjs');
    writeFileSync(
      preload,
      `import Module, { register } from 'node:module';
import { appendFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const out = ${JSON.stringify(listed)};
register(${JSON.stringify(pathToFileURL(hooks).href)}, { data: { out } });
const load = Module._load;
Module._load = function (request, parent, isMain) {
  try {
    const file = Module._resolveFilename(request, parent, isMain);
    if (!Module.isBuiltin(file)) appendFileSync(out, pathToFileURL(file).href + '\\n');
  } catch {}
  return load.apply(this, arguments);
};
`,
    );
    const env = { NODE_OPTIONS: `--import ${pathToFileURL(preload).href}` };
    const loaded = () =>
      [...new Set(readFileSync(listed, 'utf8').split('\n'))].filter((u) => u.startsWith('file:')).sort();
    const repo = (f: string) => pathToFileURL(join(REPO_DIR, f)).href;
    const hooklogFiles = [repo('bin/hooklog.js'), repo('dist/hooklog.js')];

    const version = await runCli(['--version'], env, REPO_DIR, built);
    expect(version.stderr).toBe('');
    expect(version.stdout).toMatch(/^hooklog \d+\.\d+\.\d+/);
    expect(loaded().filter((u) => u !== pathToFileURL(preload).href)).toEqual(hooklogFiles);

    writeFileSync(listed, '');
    const configPath = join(dir, 'hooklog.yaml');
    writeFileSync(
      configPath,
      stringify({
        data_dir: join(dir, 'data'),
        server: { host: '127.0.0.1', port: await freePort() },
        event_hooks: [
          { id: 'okta-main', org: 'acme', auth: { header: 'authorization', secrets: ['built-cli-secret-0123456789'] } },
        ],
      }),
    );
    const check = await runCli(['--config', configPath, 'check-config'], env, REPO_DIR, built);
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    expect(loaded().filter((u) => u !== pathToFileURL(preload).href)).toEqual(hooklogFiles);

    // A start with the store (sink role) on the embedded log: the store's engine (chdb and what it requires) is the
    // one thing loaded from node_modules, and not by the main thread: on the store's own thread
    // (platform/store/chdb-thread.ts), which the load hooks above do not watch.
    writeFileSync(listed, '');
    const started = await startDaemon(['--config', configPath, '--roles', 'receivers,sink'], env, 90_000, built);
    await stopDaemon(started);
    expect(started.output()).toContain('hooklog started');
    expect(started.output()).toContain('embedded ClickHouse opened');
    const fromModules = loaded().filter((u) => u !== pathToFileURL(preload).href && !hooklogFiles.includes(u));
    expect(fromModules, fromModules.join('\n')).toEqual([]);
  }, 120_000);

  it("check-config --schema prints the sources' config schema (the build makes it, not each start)", async () => {
    const printed = await runCli(['check-config', '--schema'], {}, REPO_DIR, built);
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    expect(JSON.parse(printed.stdout)).toEqual(configJsonSchema());
  }, 60_000);
});
