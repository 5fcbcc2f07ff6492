/**
 * The whole product, section by section, for `built-cli.test.ts`: every
 * config section hooklog has, each with what it adds to the config and what
 * it must then do in a running `node bin/hooklog.js start`. One config is
 * built from all of them, one process runs it, and every section's check runs
 * against that process.
 *
 * Adding a section (a new hook kind, risk scoring): append one entry to
 * SECTIONS with its `config` and its `check`. Nothing else changes: the test
 * builds, starts and checks whatever is listed here, and fails while a
 * top-level key of the schema is in no section.
 */
import { createServer, request, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPair, SignJWT } from 'jose';
import { expect } from 'vitest';
import { stringify } from 'yaml';
import { delivery, tokenHookRequest } from '../fixtures/index.js';
import {
  Directory,
  DirectoryApi,
  HookManagementApi,
  history,
  logEvent,
  OidcSignIn,
  SsfTransmitter,
  type SimulatedOrg,
  type SimUser,
} from '../simulated-org/index.js';
import { REPO_DIR, type CliResult } from '../support/cli.js';
import { max, total } from '../support/metrics.js';
import { makeTestCertificate } from '../support/tls.js';
import { waitFor } from '../support/wait.js';
import { TEST_SET_KEY } from '../../consumers/response/testing.js';
import { signIn } from '../../console/testing.js';
import { CAEP_SESSION_REVOKED } from '../../receivers/ssf/receiver-config.js';

/** What the sections know before hooklog starts. */
export interface Setup {
  /** A directory of the test's own (data_dir, files the config names). */
  readonly dir: string;
  /** Unique per run: org ids, topic prefix and database carry it. */
  readonly suffix: string;
  /** The simulated identity org (test/simulated-org) the `orgs` section polls. */
  readonly sim: SimulatedOrg;
  /** Where alert webhooks go: a local receiver that keeps every POST. */
  readonly webhook: WebhookReceiver;
  /**
   * The port hooklog will listen on, chosen before it starts: the console's
   * OIDC redirect URI, the SSF audience and the hook registration's public URL
   * all name it, and they are config.
   */
  readonly port: number;
  /** Registers something a section started (a server) for the test to close after hooklog stops. */
  cleanup(close: () => Promise<void>): void;
}

/** ... and once it runs. */
export interface Product extends Setup {
  /** hooklog's base URL. */
  readonly url: string;
  /** Runs the built CLI with the product's config. */
  cli(...args: string[]): Promise<CliResult>;
  /** Read-only SQL through the built CLI (the running process's admin socket). */
  sql<T = Record<string, string>>(query: string): Promise<T[]>;
  /** Everything the running process has written to stdout and stderr so far. */
  output(): string;
}

export interface Section {
  /** The config key(s) it adds. */
  readonly name: string;
  /** Async when the section must first set something up that its config names (a key set, a TLS front). */
  config(s: Setup): Record<string, unknown> | Promise<Record<string, unknown>>;
  /** What it proves on the running product; every check runs, in order. */
  check?(p: Product): Promise<void>;
}

export const HOOK_SECRET = 'product-event-hook-secret-0123';
export const TOKEN_SECRET = 'product-token-hook-secret-0123';
export const API_KEY = 'product-api-key-0123456789abcdef';
/** The simulated org's token for the polled org (the test starts it with this one). */
export const SSWS_TOKEN = 'product-ssws-token-0123';
const WEBHOOK_TOKEN = 'product-webhook-token-0123';
/** The path part of the alert webhook's URL: as with a Slack incoming webhook, the URL is itself a credential. */
const WEBHOOK_URL_TOKEN = 'product-webhook-url-token-0123';
const REGISTERED_HOOK_SECRET = 'product-registered-hook-secret-0123';
const CONSOLE_CLIENT_SECRET = 'product-console-client-secret-0123';
const SESSION_SECRET = 'product-console-session-secret-0123456789';
const SSF_AUTHORIZATION = 'Bearer product-ssf-push-secret-0123';
/** Every secret the config holds: check-config must print none of them, nor the running process's log. */
export const SECRETS = [
  HOOK_SECRET,
  TOKEN_SECRET,
  API_KEY,
  SSWS_TOKEN,
  WEBHOOK_TOKEN,
  WEBHOOK_URL_TOKEN,
  REGISTERED_HOOK_SECRET,
  CONSOLE_CLIENT_SECRET,
  SESSION_SECRET,
  SSF_AUTHORIZATION,
];

const hookOrg = (s: Setup) => `acme-${s.suffix}`;
const polledOrg = (s: Setup) => `polled-${s.suffix}`;
/**
 * The org of the hook that registers itself: an org of its own, so the watch's
 * drift events (and their alert) before the first `hooks apply` land in
 * neither the delivered org nor the polled one, whose checks count exactly.
 */
const registeredOrg = (s: Setup) => `registered-${s.suffix}`;
const REGISTERED_HOOK = 'registered';
const REGISTERED_TYPES = ['user.session.start'];
const SSF_RECEIVER = 'product-ssf';
const ssfOrg = (s: Setup) => `ssf-${s.suffix}`;
const POLLED_EVENTS = 20;
/** Users of the simulated directory the polled org's identity sync reads. */
const SYNCED_USERS = 5;

/** One delivery's events: a sign-in, a lock (the hooklog rule) and a privilege grant (the Sigma rule). */
const AT = new Date(Date.now() - 5 * 60_000).toISOString();
const EVENTS = [
  { uuid: 'a0000000-0000-4000-8000-000000000001', eventType: 'user.session.start' },
  { uuid: 'a0000000-0000-4000-8000-000000000002', eventType: 'user.account.lock' },
  { uuid: 'a0000000-0000-4000-8000-000000000003', eventType: 'user.account.privilege.grant' },
].map((e) => ({
  ...e,
  published: AT,
  actor: { id: '00u1', type: 'User', alternateId: 'ada.lovelace@acme.example' },
  outcome: { result: 'SUCCESS' },
}));
const LOCK_RULE = 'product.account.locked';
const SIGMA_TITLE = 'Okta Admin Role Granted';

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
}

export const SECTIONS: readonly Section[] = [
  {
    name: 'data_dir, server, stream, store, sink (embedded)',
    config: (s) => ({
      data_dir: join(s.dir, 'data'),
      log_level: 'info',
      server: { host: '127.0.0.1', port: s.port },
      stream: { topic_prefix: `product-${s.suffix}`, partitions: 2 },
      store: { database: `product_${s.suffix}` },
      sink: { group: `sink-${s.suffix}`, max_batch_wait_ms: 200 },
    }),
    check: async (p) => {
      expect((await get(`${p.url}/healthz`)).status).toBe(200);
      const ready = await get(`${p.url}/readyz`);
      expect(ready.status, ready.body).toBe(200);
      expect((await get(`${p.url}/metrics`)).body).toContain('hooklog_');
    },
  },
  {
    name: 'event_hooks',
    config: (s) => ({
      event_hooks: [
        { id: 'okta-main', org: hookOrg(s), auth: { header: 'authorization', secrets: [HOOK_SECRET] } },
        // The hook the hook_registration section registers with the simulated org, managed through its own
        // org's orgs[] entry (the orgs section). Here because event_hooks is one key and sections merge shallowly.
        {
          id: REGISTERED_HOOK,
          org: registeredOrg(s),
          auth: { header: 'authorization', secrets: [REGISTERED_HOOK_SECRET] },
          register: { event_types: REGISTERED_TYPES },
        },
      ],
    }),
    check: async (p) => {
      const verify = await get(`${p.url}/hooks/events/okta-main`, {
        authorization: HOOK_SECRET,
        'x-okta-verification-challenge': 'hello',
      });
      expect(JSON.parse(verify.body)).toEqual({ verification: 'hello' });
      const res = await fetch(`${p.url}/hooks/events/okta-main`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: HOOK_SECRET },
        body: JSON.stringify(delivery(hookOrg(p), 'okta-main', EVENTS)),
        signal: AbortSignal.timeout(3000),
      });
      expect(res.status).toBe(204);
      const stored = await waitFor(
        () => p.sql<{ uuid: string }>(`SELECT uuid FROM events WHERE org = '${hookOrg(p)}' ORDER BY uuid`),
        {
          until: (rows) => rows.length === EVENTS.length,
          timeoutMs: 60_000,
          what: "the delivery's events in ClickHouse",
        },
      );
      expect(stored.map((r) => r.uuid)).toEqual(EVENTS.map((e) => e.uuid));
    },
  },
  {
    name: 'token_hooks (a lookup table from a file)',
    config: (s) => {
      const table = join(s.dir, 'employees.csv');
      writeFileSync(table, 'login,department\nada.lovelace@acme.example,Analytical Engines\n');
      return {
        token_hooks: [
          {
            id: 'tokens',
            org: hookOrg(s),
            auth: { type: 'header', header: 'authorization', secrets: [TOKEN_SECRET] },
            lookups: [{ name: 'employees', file: table, format: 'csv', key: 'login' }],
            rules: [
              {
                name: 'department',
                actions: [
                  {
                    add: {
                      tokens: 'access',
                      claim: 'department',
                      lookup: { table: 'employees', key: '{{user.login}}', column: 'department' },
                    },
                  },
                ],
              },
            ],
            audit: { flush_interval_ms: 100 },
          },
        ],
      };
    },
    check: async (p) => {
      const res = await fetch(`${p.url}/hooks/token/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: TOKEN_SECRET },
        body: JSON.stringify(tokenHookRequest()),
        signal: AbortSignal.timeout(3000),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        commands: [
          {
            type: 'com.okta.access.patch',
            value: [{ op: 'add', path: '/claims/department', value: 'Analytical Engines' }],
          },
        ],
      });
      await waitFor(() => p.sql(`SELECT outcome FROM token_decisions WHERE hook_id = 'tokens'`), {
        until: (rows) => rows.length === 1,
        timeoutMs: 60_000,
        what: 'the decision in token_decisions',
      });
    },
  },
  {
    name: 'orgs (System Log polling and the identity sync of the simulated org)',
    config: (s) => {
      s.sim.addLogEvents(history({ count: POLLED_EVENTS, days: 1, now: Date.now(), kind: 'log', seed: 5 }));
      // The directory orgs[].identity_sync reads: users with groups and admin roles (docs/operate/identity-sync.md).
      const directory = new Directory();
      directory.addGroup('00gadmins', 'Admins', { roles: ['ORG_ADMIN'] });
      for (let i = 0; i < SYNCED_USERS; i++) directory.addUser(`00usync${i}`, `sync${i}@product.test`);
      directory.addMember('00gadmins', '00usync0');
      s.sim.use(new DirectoryApi(directory));
      return {
        orgs: [
          {
            id: polledOrg(s),
            base_url: s.sim.url,
            auth: { ssws: { token: SSWS_TOKEN } },
            system_log: { start: '2d', poll_interval_ms: 200 },
            identity_sync: { enabled: true, interval_ms: 1_000, full_interval_ms: 60_000 },
          },
          // The registered hook's org (hook_registration): the same simulated org, not polled. Its own entry, as
          // the watch appends its drift events to the managing org, and the polled org's count must stay exact.
          {
            id: registeredOrg(s),
            base_url: s.sim.url,
            auth: { ssws: { token: SSWS_TOKEN } },
            system_log: { enabled: false },
          },
        ],
      };
    },
    check: async (p) => {
      await waitFor(
        async () => (await p.sql<{ n: string }>(`SELECT count() AS n FROM events WHERE org = '${polledOrg(p)}'`))[0]?.n,
        { until: (n) => n === String(POLLED_EVENTS), timeoutMs: 60_000, what: 'every polled event in ClickHouse' },
      );
      await waitFor(
        () =>
          p.sql<{ user_id: string; admin_roles: string[] }>(
            `SELECT user_id, admin_roles FROM identity_users FINAL WHERE org = '${polledOrg(p)}' ORDER BY user_id`,
          ),
        {
          until: (rows) => rows.length === SYNCED_USERS,
          timeoutMs: 60_000,
          what: 'every synced user in identity_users',
        },
      ).then((rows) => expect(rows[0]).toEqual({ user_id: '00usync0', admin_roles: ['ORG_ADMIN'] }));
    },
  },
  {
    name: 'alerting (a rule file, Sigma, the built-in content, a webhook)',
    config: (s) => {
      const rules = join(s.dir, 'rules.yaml');
      writeFileSync(
        rules,
        stringify([
          { id: LOCK_RULE, title: 'Account locked', severity: 'high', detection: 'eventType eq "user.account.lock"' },
        ]),
      );
      const sigma = join(s.dir, 'sigma');
      mkdirSync(sigma);
      // One published-format rule of the project's own fixtures (test/fixtures/sigma).
      copyFileSync(
        join(import.meta.dirname, '..', 'fixtures', 'sigma', 'admin_role_granted.yml'),
        join(sigma, 'admin.yml'),
      );
      return {
        alerting: {
          rule_files: [rules],
          sigma_paths: [sigma],
          allowed_lateness_ms: 1000,
          group: `alerting-${s.suffix}`,
          webhooks: [{ name: 'ops', url: s.webhook.url, headers: { authorization: `Bearer ${WEBHOOK_TOKEN}` } }],
        },
      };
    },
    check: async (p) => {
      const alerts = await waitFor(
        () =>
          p.sql<{ rule_title: string; org: string }>(
            `SELECT rule_title, org FROM alerts FINAL WHERE org = '${hookOrg(p)}' ORDER BY rule_title`,
          ),
        { until: (rows) => rows.length >= 2, timeoutMs: 60_000, what: 'the alerts of both rules' },
      );
      expect(alerts.map((a) => a.rule_title)).toEqual(['Account locked', SIGMA_TITLE]);
      // Only this org's: the registered hook's drift alert (hook_registration, before its apply) goes there too.
      const ours = () => p.webhook.received.filter((r) => (r.body as { org: string }).org === hookOrg(p));
      const posted = await waitFor(() => ours(), {
        until: (rows) => rows.length >= 2,
        timeoutMs: 30_000,
        what: 'the alerts at the webhook',
      });
      expect(posted.map((r) => (r.body as { rule_title: string }).rule_title).sort()).toEqual([
        'Account locked',
        SIGMA_TITLE,
      ]);
      expect(posted.every((r) => r.authorization === `Bearer ${WEBHOOK_TOKEN}`)).toBe(true);
      // The backtest beside the running process, through its admin socket.
      const test = await p.cli('rules', 'test', LOCK_RULE, '--since', '1d', '--org', hookOrg(p), '-f', 'json');
      expect(test.stderr).toBe('');
      expect(JSON.parse(test.stdout)).toMatchObject({ rules: [{ rule: LOCK_RULE, alerts: 1 }] });
    },
  },
  {
    name: 'enrichment (a named IP list from a file)',
    config: (s) => {
      const offices = join(s.dir, 'offices.txt');
      writeFileSync(offices, '# the offices\n198.51.100.0/24\n2001:db8:1::/48\n');
      return { enrichment: { ip_lists: [{ name: 'offices', path: offices }], reload_interval_ms: 1000 } };
    },
    check: async (p) => {
      // The CLI reads the configured lists: a rule naming one lints clean, one naming no configured list is refused.
      const rules = join(p.dir, 'list-rules.yaml');
      writeFileSync(
        rules,
        stringify([
          { id: 'from-office', title: 'From an office', detection: 'client.ipAddress in list("offices")' },
          { id: 'from-nowhere', title: 'From nowhere', detection: 'client.ipAddress in list("nowhere")' },
        ]),
      );
      const lint = await p.cli('rules', 'lint', rules, '-f', 'json');
      const problems = JSON.parse(lint.stdout) as Array<{ where: string; severity: string; problem: string }>;
      expect(lint.code).toBe(1);
      const errors = problems.filter((x) => x.severity === 'error');
      expect(errors.map((x) => x.problem)).toEqual([
        expect.stringMatching(/^rule from-nowhere\.detection: unknown IP list "nowhere" .*\(configured: offices\)/),
      ]);
    },
  },
  {
    name: 'api (the query API)',
    config: () => ({ api: { keys: [API_KEY] } }),
    check: async (p) => {
      expect((await get(`${p.url}/api/queries`, { authorization: 'Bearer wrong-key-0123456789abcdef' })).status).toBe(
        401,
      );
      const since = new Date(Date.now() - 86_400_000).toISOString();
      const until = new Date(Date.now() + 60_000).toISOString();
      const res = await get(`${p.url}/api/queries/user_lifecycle?org=${hookOrg(p)}&since=${since}&until=${until}`, {
        authorization: `Bearer ${API_KEY}`,
      });
      expect(res.status, res.body).toBe(200);
      expect(res.body).toContain('user.account.lock');
    },
  },
  {
    name: 'response (the SET transmitter and response actions)',
    config: (s) => {
      const key = join(s.dir, 'set-key.pem');
      writeFileSync(key, TEST_SET_KEY);
      return {
        response: {
          group: `response-${s.suffix}`,
          transmitter: { issuer: 'https://hooklog.product.test', private_key_path: key },
          actions: { on_level: { high: ['clear_sessions'] } },
          orgs: [{ org: polledOrg(s), actions: { mode: 'dry_run', allow: ['clear_sessions'] } }],
        },
      };
    },
    check: async (p) => {
      const conf = await get(`${p.url}/.well-known/ssf-configuration`);
      expect(conf.status).toBe(200);
      expect(JSON.parse(conf.body)).toMatchObject({
        issuer: 'https://hooklog.product.test',
        jwks_uri: 'https://hooklog.product.test/.well-known/jwks.json',
      });
      const jwks = JSON.parse((await get(`${p.url}/.well-known/jwks.json`)).body) as { keys: Array<{ kty: string }> };
      expect(jwks.keys.map((k) => k.kty)).toEqual(['RSA']);
      const listed = await p.cli('actions', 'list', '-f', 'json');
      expect(listed.stderr).toBe('');
      expect(JSON.parse(listed.stdout)).toEqual([]);
    },
  },
  consoleSection(),
  ssfReceiverSection(),
  hookRegistrationSection(),
  {
    name: 'roles, instance_id, log, event_hook_receiver',
    config: (s) => ({
      roles: ['receivers', 'pollers', 'sink', 'alerting'],
      instance_id: `product-${s.suffix}`,
      log: { format: 'json' },
      // Off (the default remembers 100,000): a repeated delivery is then appended again, which shows it is read.
      event_hook_receiver: { dedupe_capacity: 0 },
    }),
    check: async (p) => {
      const lines = p
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.find((l) => l.msg === 'hooklog started')).toMatchObject({
        instance: `product-${p.suffix}`,
        roles: ['receivers', 'pollers', 'sink', 'alerting'],
      });
      // Secrets are redacted from the log (platform/log.ts): no secret of the config is in anything it wrote.
      for (const secret of SECRETS) expect(p.output()).not.toContain(secret);

      const again = await fetch(`${p.url}/hooks/events/okta-main`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: HOOK_SECRET },
        body: JSON.stringify(delivery(hookOrg(p), 'okta-main', EVENTS)),
        signal: AbortSignal.timeout(3000),
      });
      expect(again.status).toBe(204);
      const metrics = (await get(`${p.url}/metrics`)).body;
      const events = (outcome: string) =>
        total(metrics, 'hooklog_event_hook_events_total', { hook: 'okta-main', outcome });
      expect([events('appended'), events('duplicate')]).toEqual([2 * EVENTS.length, 0]);
    },
  },
];

/** The config with every section, as written to hooklog.yaml. */
export async function productConfig(s: Setup): Promise<Record<string, unknown>> {
  const parts: Array<Record<string, unknown>> = [];
  for (const x of SECTIONS) parts.push(await x.config(s));
  return Object.assign({}, ...parts) as Record<string, unknown>;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly received: Array<{ body: unknown; authorization: string | undefined }>;
  close(): Promise<void>;
}

/** A local endpoint for alert webhooks: answers 200 and keeps what it got. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: WebhookReceiver['received'] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    received.push({
      body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      authorization: req.headers.authorization,
    });
    res.end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts/${WEBHOOK_URL_TOKEN}`,
    received,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

/** hooklog's own address (the port is chosen before it starts). */
const localUrl = (s: Setup) => `http://127.0.0.1:${s.port}`;

const CONSOLE_CLIENT = 'hooklog-product-console';
const ANALYST: SimUser = { login: 'ada.lovelace@acme.example', password: 'ada-pw-0123', groups: ['product-sec'] };

/**
 * The console, signed in through the simulated org's OIDC with plain HTTP (the
 * redirect dance: login, authorize, the org's form, callback); the browser
 * suite (console/console.browser.test.ts) drives the page itself.
 */
function consoleSection(): Section {
  let oidc: OidcSignIn | undefined;
  return {
    name: 'console (OIDC sign-in against the simulated org)',
    config: (s) => {
      oidc = new OidcSignIn(
        [
          {
            clientId: CONSOLE_CLIENT,
            clientSecret: CONSOLE_CLIENT_SECRET,
            redirectUris: [`${localUrl(s)}/console/auth/callback`],
          },
        ],
        [ANALYST],
      );
      s.sim.use(oidc);
      return {
        console: {
          enabled: true,
          public_url: localUrl(s),
          session_secret: SESSION_SECRET,
          oidc: {
            issuer: s.sim.url,
            client_id: CONSOLE_CLIENT,
            client_secret: CONSOLE_CLIENT_SECRET,
            grants: [{ group: 'product-sec', orgs: [hookOrg(s)], role: 'analyst' }],
          },
        },
      };
    },
    check: async (p) => {
      const page = await fetch(`${p.url}/console/alerts`, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });
      expect(page.status).toBe(302);
      expect(page.headers.get('location')).toMatch(/^\/console\/auth\/login\?return_to=/);
      const unsigned = await fetch(`${p.url}/console/api/alerts`, { signal: AbortSignal.timeout(10_000) });
      expect(unsigned.status).toBe(401);
      // The bundle `npm run build` wrote (console/web/dist), served as built.
      for (const file of ['app.js', 'app.css']) {
        const res = await fetch(`${p.url}/console/assets/${file}`, { signal: AbortSignal.timeout(10_000) });
        expect(res.status, file).toBe(200);
        expect(
          Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(REPO_DIR, 'console/web/dist', file))),
          file,
        ).toBe(true);
      }

      const session = await signIn({ url: p.url }, ANALYST);
      // The client secret went to the org's token endpoint (a confidential client), and the token named the group.
      expect(oidc!.issued.at(-1)).toMatchObject({ aud: CONSOLE_CLIENT, groups: ['product-sec'] });
      const shell = await get(`${p.url}/console/alerts`, { cookie: session.cookie });
      expect(shell.status).toBe(200);
      expect(shell.body).toContain('<script type="module" src="/console/assets/app.js"></script>');
      const me = JSON.parse((await get(`${p.url}/console/api/me`, { cookie: session.cookie })).body) as unknown;
      expect(me).toMatchObject({ name: ANALYST.login, kind: 'user', role: 'analyst', orgs: [hookOrg(p)] });

      const alerts = await get(`${p.url}/console/api/alerts?org=${hookOrg(p)}`, { cookie: session.cookie });
      expect(alerts.status, alerts.body).toBe(200);
      const listed = (JSON.parse(alerts.body) as { alerts: Array<{ rule_title: string; org: string }> }).alerts;
      expect(listed.map((a) => a.rule_title).sort()).toEqual(['Account locked', SIGMA_TITLE]);
      // Another org is not there for this user: 404 when named, absent from the list that names none.
      expect(
        (await get(`${p.url}/console/api/alerts?org=${registeredOrg(p)}`, { cookie: session.cookie })).status,
      ).toBe(404);
      const all = JSON.parse((await get(`${p.url}/console/api/alerts`, { cookie: session.cookie })).body) as {
        alerts: Array<{ org: string }>;
      };
      expect(new Set(all.alerts.map((a) => a.org))).toEqual(new Set([hookOrg(p)]));
    },
  };
}

/**
 * An SSF receiver (RFC 8935 push) trusting the simulated org's transmitter:
 * its key set found through the transmitter's configuration document.
 */
function ssfReceiverSection(): Section {
  let transmitter: SsfTransmitter | undefined;
  const audience = (s: Setup) => `${localUrl(s)}/hooks/ssf/${SSF_RECEIVER}`;
  return {
    name: 'ssf_receivers (SETs pushed by the simulated org)',
    config: async (s) => {
      transmitter = await SsfTransmitter.create(s.sim, 'RS256');
      return {
        ssf_receivers: [
          {
            id: SSF_RECEIVER,
            org: ssfOrg(s),
            issuer: s.sim.url,
            configuration_url: transmitter.configurationUrl,
            audience: audience(s),
            authorization: { secrets: [SSF_AUTHORIZATION] },
          },
        ],
      };
    },
    check: async (p) => {
      const t = transmitter!;
      const url = `${p.url}/hooks/ssf/${SSF_RECEIVER}`;
      const user = { id: '00u1ada', login: 'ada.lovelace@acme.example' };
      const good = await t.sessionRevoked(user, { aud: audience(p) });
      // Without the configured Authorization header: refused before the SET is read.
      expect(await t.push(url, good)).toMatchObject({ status: 400, err: 'authentication_failed' });
      // Unsigned (alg none): refused before any key is looked up.
      const claims = {
        iss: p.sim.url,
        aud: audience(p),
        iat: Math.floor(Date.now() / 1000),
        jti: 'product-unsigned-set',
        events: { [CAEP_SESSION_REVOKED]: { event_timestamp: Math.floor(Date.now() / 1000) } },
      };
      const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const unsigned = `${b64({ alg: 'none', typ: 'secevent+jwt' })}.${b64(claims)}.`;
      expect(await t.push(url, unsigned, SSF_AUTHORIZATION)).toMatchObject({ status: 400, err: 'invalid_key' });
      // Signed by a key the transmitter does not publish, under its kid: the signature does not verify.
      const stranger = await generateKeyPair('RS256');
      const forged = await new SignJWT({ ...claims, jti: 'product-forged-set' })
        .setProtectedHeader({ alg: 'RS256', kid: t.currentKid, typ: 'secevent+jwt' })
        .sign(stranger.privateKey);
      expect(await t.push(url, forged, SSF_AUTHORIZATION)).toMatchObject({
        status: 400,
        err: 'authentication_failed',
      });
      // Signed by the transmitter, whose keys the config trusts: accepted and stored.
      expect((await t.push(url, good, SSF_AUTHORIZATION)).status).toBe(202);
      const jti = (JSON.parse(Buffer.from(good.split('.')[1]!, 'base64url').toString()) as { jti: string }).jti;
      const stored = await waitFor(
        () =>
          p.sql(`SELECT jti, event_name, subject_sub, subject_email FROM security_events WHERE org = '${ssfOrg(p)}'`),
        { until: (rows) => rows.length > 0, timeoutMs: 60_000, what: 'the accepted SET in security_events' },
      );
      expect(stored).toEqual([
        { jti, event_name: 'security.events.caep.session_revoked', subject_sub: user.id, subject_email: user.login },
      ]);
      const letters = await waitFor(
        () => p.sql<{ reason: string }>(`SELECT reason FROM deadletter WHERE origin = 'ssf-receiver' ORDER BY reason`),
        { until: (rows) => rows.length >= 2, timeoutMs: 60_000, what: 'the refused SETs in deadletter' },
      );
      expect(letters.map((r) => r.reason.split(':').slice(0, 2).join(':'))).toEqual([
        'RECORD_INVALID: authentication_failed',
        'RECORD_INVALID: invalid_key',
      ]);
    },
  };
}

/**
 * Hook registration: `hooks plan`, then `hooks apply`, whose verification the
 * simulated org runs against hooklog's public URL. The org calls https only,
 * so the public URL is a TLS front (what a load balancer is) passing requests
 * on to hooklog's plain HTTP port: "TLS ends there or in hooklog".
 */
function hookRegistrationSection(): Section {
  let api: HookManagementApi | undefined;
  let publicUrl = '';
  return {
    name: 'hook_registration (hooks plan | apply | status, the watch)',
    config: async (s) => {
      const cert = makeTestCertificate();
      api = new HookManagementApi(s.sim, { ca: cert.cert });
      s.sim.use(api);
      const front = await startTlsFront(cert, s.port);
      s.cleanup(front.close);
      publicUrl = front.url;
      return { hook_registration: { public_url: publicUrl, watch_interval_ms: 500 } };
    },
    check: async (p) => {
      const org = registeredOrg(p);
      const name = `hooklog:${REGISTERED_HOOK}`;
      // Before any apply the running process's watch reports the hook not registered: never applied yet, no finding.
      await waitFor(
        async () =>
          max((await get(`${p.url}/metrics`)).body, 'hooklog_hook_registered', {
            org,
            kind: 'event',
            hook: REGISTERED_HOOK,
          }),
        { until: (n) => n === 0, timeoutMs: 60_000, what: 'hooklog_hook_registered 0 before the first apply' },
      );

      const plan = await p.cli('hooks', 'plan');
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.stdout).toContain(`+ event hook "${REGISTERED_HOOK}" (org ${org}): create, verify "${name}"`);
      expect(plan.stdout).toContain('Plan: 1 to create, 0 to change, 0 to delete, 0 in sync, 0 refused.');
      expect(api!.named('event', name)).toEqual([]);

      const apply = await p.cli('hooks', 'apply');
      expect(apply.code, apply.stderr + apply.stdout).toBe(0);
      expect(apply.stdout).toMatch(
        new RegExp(`event hook "${REGISTERED_HOOK}" \\(org [^,]+, \\w+\\): created, verified`),
      );
      const [hook] = api!.named('event', name);
      expect(hook).toMatchObject({
        status: 'ACTIVE',
        verificationStatus: 'VERIFIED',
        events: { items: REGISTERED_TYPES },
      });
      expect(hook!.channel.config).toMatchObject({
        uri: `${publicUrl}/hooks/events/${REGISTERED_HOOK}`,
        authScheme: { type: 'HEADER', key: 'authorization', value: REGISTERED_HOOK_SECRET },
      });
      const status = await p.cli('hooks', 'status', '--format', 'json');
      expect(status.code, status.stderr).toBe(0);
      expect(
        (JSON.parse(status.stdout) as Array<Record<string, string>>).find((r) => r.hook === REGISTERED_HOOK),
      ).toMatchObject({
        kind: 'event',
        id: hook!.id,
        status: 'ACTIVE',
        verification: 'VERIFIED',
        drift: 'none',
      });
      // The watch of the running process sees it active.
      await waitFor(
        async () =>
          total((await get(`${p.url}/metrics`)).body, 'hooklog_hook_active', {
            org,
            kind: 'event',
            hook: REGISTERED_HOOK,
          }),
        { until: (n) => n === 1, timeoutMs: 30_000, what: 'hooklog_hook_active 1' },
      );

      // The org now delivers what the hook subscribes to, through the public URL, and hooklog stores it.
      const [event] = p.sim.addLogEvents([
        { event: { ...logEvent(1), eventType: REGISTERED_TYPES[0]! }, published: Date.now() },
      ]);
      await api!.deliver([event!]);
      expect(api!.attempts.map((a) => a.status)).toEqual([204]);
      await waitFor(
        () => p.sql(`SELECT uuid FROM events WHERE org = '${org}' AND event_type = '${REGISTERED_TYPES[0]!}'`),
        { until: (rows) => rows.length === 1, timeoutMs: 60_000, what: "the registered hook's event in ClickHouse" },
      );
      // Its absence before the first apply was recorded as no drift (a new deployment raises no alert).
      expect(await p.sql(`SELECT uuid FROM events WHERE org = '${org}' AND event_type = 'hooklog.hook.drift'`)).toEqual(
        [],
      );
    },
  };
}

/** An HTTPS front passing every request on to hooklog's plain HTTP port, as a TLS-terminating load balancer does. */
async function startTlsFront(
  cert: { certPath: string; keyPath: string },
  port: number,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createTlsServer({ cert: readFileSync(cert.certPath), key: readFileSync(cert.keyPath) }, (req, res) => {
    const upstream = request(
      { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      res.statusCode = 502;
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
