/**
 * Plumbing of the hook registration tests: the simulated org with its hook
 * management API (trusting a CA made for the test), and a hooklog config
 * whose hooks register themselves with that org, served over TLS on a port
 * chosen before start (the registered URI names it), given as ${PORT}.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { HookManagementApi, SimulatedOrg } from '../simulated-org/index.js';
import type { SimulatedOrgOptions } from '../simulated-org/server.js';
import { runCli, type CliResult } from '../support/cli.js';
import { writeTestConfig, type TestInstance } from '../support/hooklog-config.js';
import { makeTestCertificate, type TestCertificate } from '../support/tls.js';
import { parse, stringify } from 'yaml';

export const EVENT_TYPES = ['user.authentication.sso', 'user.session.start'];
export const EVENT_SECRET = 'event-hook-secret-0123456789';
export const TOKEN_SECRET = 'token-hook-secret-0123456789';

/** A port nobody listens on now (the OS's next free one). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

export interface RegistrationWorld {
  readonly sim: SimulatedOrg;
  readonly api: HookManagementApi;
  readonly cert: TestCertificate;
  readonly port: number;
  readonly inst: TestInstance;
  /** The org's id in hooklog (both the hooks' org and the managing orgs[] entry). */
  readonly org: string;
  /** `hooklog <args> --config <file>` with `cliEnv`, from source or built (HOOKLOG_CLI=built). */
  cli(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<CliResult>;
  /** What an admin does in the console: one management call with the org's SSWS token. */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** The most requests one window of a family's bucket (HOOK_BUCKET) took, from anyone. */
  busiestWindow(family: 'eventHooks' | 'inlineHooks'): number;
  stop(): Promise<void>;
}

export interface WorldOptions {
  readonly sim?: SimulatedOrgOptions;
  /** The token hooklog's orgs[] entry uses. Default sim-token. */
  readonly token?: string;
  readonly eventSecrets?: readonly string[];
  /** Default: https://127.0.0.1:<port>. */
  readonly publicUrl?: string;
  readonly tokenHook?: boolean;
  readonly extra?: Record<string, unknown>;
}

/** How often hooklog's watch reads the org's hooks here: a change shows in the metrics within a pass or two. */
const WATCH_INTERVAL_MS = 300;

/**
 * Each hook family's rate-limit bucket at the org (`event-hooks`, `inline-hooks`). The watch spends one request
 * of each per pass, up to 60,000 / WATCH_INTERVAL_MS = 200 a minute, and the commands spend theirs beside it (one
 * budget ledger per host). With the simulated org's default (100 a minute, of which hooklog's default share of 0.3
 * allows 29) the watch spent each minute's share in its first seconds and waited out the rest of the window, and
 * every command with it: a repair whose activate took a window's last request showed in the gauges only when the
 * next window opened, up to a minute later. 1,000 a minute allows 299, so nothing of hooklog's ever waits for the
 * budget here; the test checks that (`busiestWindow`).
 */
export const HOOK_BUCKET = { limit: 1_000, windowMs: 60_000 } as const;

/**
 * What the CLI needs here: PORT, and the test's CA among those it trusts (apply sends hooklog the verification
 * challenge itself before it changes an event hook's channel).
 */
export function cliEnv(port: number, cert: TestCertificate): NodeJS.ProcessEnv {
  return { PORT: String(port), NODE_EXTRA_CA_CERTS: cert.certPath };
}

export async function registrationWorld(o: WorldOptions = {}): Promise<RegistrationWorld> {
  const cert = makeTestCertificate();
  const sim = await SimulatedOrg.start({
    ...o.sim,
    rateLimit: { management: HOOK_BUCKET, ...o.sim?.rateLimit },
  });
  const api = new HookManagementApi(sim, { ca: cert.cert });
  sim.use(api);
  const port = await freePort();
  const org = `acme-${Math.random().toString(36).slice(2, 8)}`;
  const inst = writeTestConfig({
    extra: {
      server: { host: '127.0.0.1', port: '${PORT}', tls: { cert_path: cert.certPath, key_path: cert.keyPath } },
      hook_registration: {
        public_url: o.publicUrl ?? 'https://127.0.0.1:${PORT}',
        watch_interval_ms: WATCH_INTERVAL_MS,
      },
      event_hooks: [
        {
          id: 'okta-main',
          org,
          auth: { header: 'authorization', secrets: o.eventSecrets ?? [EVENT_SECRET] },
          register: { event_types: EVENT_TYPES },
        },
      ],
      token_hooks:
        o.tokenHook === false
          ? []
          : [{ id: 'okta-tokens', org, auth: { type: 'header', secrets: [TOKEN_SECRET] }, register: {} }],
      orgs: [
        {
          id: org,
          base_url: sim.url,
          auth: { ssws: { token: o.token ?? 'sim-token' } },
          request_timeout_ms: 20_000,
          system_log: { enabled: false },
        },
      ],
      alerting: { enabled: true, max_batch_wait_ms: 50 },
      ...o.extra,
    },
  });
  return {
    sim,
    api,
    cert,
    port,
    inst,
    org,
    cli: (args, env = {}) => runCli([...args, '--config', inst.configPath], { ...cliEnv(port, cert), ...env }),
    admin: async (method, path, body) => {
      const res = await fetch(`${sim.url}${path}`, {
        method,
        headers: { authorization: 'SSWS sim-token', accept: 'application/json', 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
    },
    busiestWindow: (family) => {
      const per = new Map<number, number>();
      for (const r of sim.requests.filter((x) => x.path.startsWith(`/api/v1/${family}`))) {
        const window = Math.floor(r.at / HOOK_BUCKET.windowMs);
        per.set(window, (per.get(window) ?? 0) + 1);
      }
      return Math.max(0, ...per.values());
    },
    stop: () => sim.stop(),
  };
}

/** A rotation's two secrets (the event hook's `auth.secrets` before and after). */
export const OLD_SECRET = 'old-hook-secret-0123456789';
export const NEW_SECRET = 'new-hook-secret-9876543210';

/** The config file with the event hook's secrets replaced, written beside it. */
export function withSecrets(path: string, name: string, secrets: string[]): string {
  const cfg = parse(readFileSync(path, 'utf8')) as { event_hooks: Array<{ auth: { secrets: string[] } }> };
  cfg.event_hooks[0]!.auth.secrets = secrets;
  const out = path.replace(/hooklog\.yaml$/, `${name}.yaml`);
  writeFileSync(out, stringify(cfg));
  return out;
}
