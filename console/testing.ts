/**
 * Test support for the console: a simulated org with OIDC sign-in and three
 * users (an analyst of org A, an analyst of org B, a viewer of A), a hooklog
 * started as `hooklog start` starts it (embedded stream and chdb, or Kafka)
 * with the console on, a detection rule, and events delivered through the
 * event hooks of both orgs until their alerts are in ClickHouse. Sign-in goes
 * through the real redirect dance (login, authorize, the org's form, callback).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../cli/config/load.js';
import { startHooklog, type Running } from '../cli/runtime.js';
import { silentLogger, type Logger } from '../platform/log.js';
import { delivery } from '../test/fixtures/index.js';
import { OidcSignIn, SimulatedOrg, type SimUser } from '../test/simulated-org/index.js';
import { postDelivery, TEST_SECRET } from '../test/support/hooklog-config.js';
import { randomName, waitFor } from '../test/support/wait.js';

export const CLIENT_ID = 'hooklog-console';
export const SESSION_SECRET = 'console-session-secret-0123456789abcdef';
export const ORG_A = 'org-a';
export const ORG_B = 'org-b';
export const KEY_A = 'key-for-org-a-0123456789abcdef';
export const KEY_ALL = 'bare-key-all-orgs-0123456789ab';
export const USERS: Readonly<Record<'alice' | 'bob' | 'vera', SimUser>> = {
  alice: { login: 'alice@a.example', password: 'alice-pw', groups: ['sec-a'] },
  bob: { login: 'bob@b.example', password: 'bob-pw', groups: ['sec-b'] },
  vera: { login: 'vera@a.example', password: 'vera-pw', groups: ['view-a'] },
};
/** The rule the tests' alerts come from: each failed sign-in, grouped by the user. */
export const RULE_ID = 'console.test.signin_failure';

/** A free local port (the console's public URL must be known before it starts: it is the redirect URI). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface ConsoleWorld {
  readonly sim: SimulatedOrg;
  readonly oidc: OidcSignIn;
  readonly hooklog: Running;
  readonly url: string;
  stop(): Promise<void>;
}

export interface WorldOptions {
  readonly kafkaBrokers?: string;
  /** Share these across instances of a fleet (Kafka only). */
  readonly topicPrefix?: string;
  readonly sim?: { sim: SimulatedOrg; oidc: OidcSignIn };
  /** Listen here (a fleet's redirect URIs are registered before its instances start). */
  readonly port?: number;
  readonly sessionTtlMinutes?: number;
  readonly signInAttemptsPerMinute?: number;
  /** `console.regrant_minutes` (default 15). */
  readonly regrantMinutes?: number;
  /** The in-process instance's logger (default silent). */
  readonly logger?: Logger;
  /** The sink's `max_record_bytes` (a test of 1 MB fields raises it). */
  readonly maxRecordBytes?: number;
}

export async function startSimulatedIdp(
  redirectUris: readonly string[],
): Promise<{ sim: SimulatedOrg; oidc: OidcSignIn }> {
  const oidc = new OidcSignIn([{ clientId: CLIENT_ID, redirectUris }], Object.values(USERS));
  const sim = (await SimulatedOrg.start({})).use(oidc);
  return { sim, oidc };
}

/** hooklog's config (as YAML would hold it) for a console test instance listening on `port`, signing in at `issuer`. */
export function consoleConfigInput(o: WorldOptions & { port: number; issuer: string }): Record<string, unknown> {
  const url = `http://127.0.0.1:${o.port}`;
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-console-'));
  return {
    data_dir: join(dir, 'data'),
    server: { host: '127.0.0.1', port: o.port },
    stream: {
      topic_prefix: o.topicPrefix ?? randomName('console'),
      partitions: 2,
      ...(o.kafkaBrokers ? { kafka: { brokers: o.kafkaBrokers.split(','), client_id: randomName('console') } } : {}),
    },
    store: { database: randomName('console') },
    sink: {
      group: randomName('sink'),
      max_batch_wait_ms: 100,
      ...(o.maxRecordBytes ? { max_record_bytes: o.maxRecordBytes } : {}),
    },
    event_hooks: [ORG_A, ORG_B].map((org) => ({
      id: `hook-${org}`,
      org,
      auth: { header: 'authorization', secrets: [TEST_SECRET] },
    })),
    alerting: {
      group: randomName('alerting'),
      max_batch_wait_ms: 50,
      rules: [
        {
          id: RULE_ID,
          title: 'Failed sign-in',
          severity: 'medium',
          type: 'match',
          group_by: ['actor.alternateId'],
          suppress_ms: 0,
          detection: { sel: { eventType: 'user.session.start', 'outcome.result': 'FAILURE' }, condition: 'sel' },
        },
      ],
    },
    api: {
      keys: [KEY_ALL, { name: 'org-a-tool', secret: KEY_A, orgs: [ORG_A], role: 'analyst' }],
    },
    console: {
      enabled: true,
      public_url: url,
      session_secret: SESSION_SECRET,
      session_ttl_minutes: o.sessionTtlMinutes ?? 60,
      sign_in_attempts_per_minute: o.signInAttemptsPerMinute ?? 1000,
      ...(o.regrantMinutes !== undefined ? { regrant_minutes: o.regrantMinutes } : {}),
      oidc: {
        issuer: o.issuer,
        client_id: CLIENT_ID,
        grants: [
          { group: 'sec-a', orgs: [ORG_A], role: 'analyst' },
          { group: 'sec-b', orgs: [ORG_B], role: 'analyst' },
          { group: 'view-a', orgs: [ORG_A], role: 'viewer' },
        ],
      },
    },
  };
}

/** Starts hooklog in this process with the console on (and alerting on the test rule), signed in through `sim`. */
export async function startConsoleWorld(o: WorldOptions = {}): Promise<ConsoleWorld> {
  const port = o.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const idp = o.sim ?? (await startSimulatedIdp([`${url}/console/auth/callback`]));
  const config = parseConfig(consoleConfigInput({ ...o, port, issuer: idp.sim.url }), {});
  const hooklog = await startHooklog(config, o.logger ?? silentLogger());
  return {
    ...idp,
    hooklog,
    url,
    stop: async () => {
      await hooklog.stop();
      if (!o.sim) await idp.sim.stop();
    },
  };
}

/** A failed sign-in of `user` in the last hour, whose free-text fields the caller may fill with anything. */
export function failedSignIn(
  user: string,
  over: { userAgent?: string; displayName?: string; ip?: string; country?: string } = {},
) {
  return {
    uuid: randomUUID(),
    published: new Date(Date.now() - 5 * 60_000 - Math.floor(Math.random() * 60_000)).toISOString(),
    eventType: 'user.session.start',
    version: '0',
    severity: 'WARN',
    displayMessage: 'User login to Okta',
    actor: { id: `00u${user.length}x`, type: 'User', alternateId: user, displayName: over.displayName ?? user },
    client: {
      ipAddress: over.ip ?? '203.0.113.7',
      userAgent: { rawUserAgent: over.userAgent ?? 'Mozilla/5.0', browser: 'CHROME', os: 'Windows 10' },
      geographicalContext: { country: over.country ?? 'France', city: 'Paris' },
    },
    outcome: { result: 'FAILURE', reason: 'INVALID_CREDENTIALS' },
    target: [],
  };
}

/** Delivers events to an org's hook and waits until they are in ClickHouse (whether or not they raise alerts). */
export async function deliverEvents(
  w: ConsoleWorld,
  org: string,
  events: ReadonlyArray<Record<string, unknown>>,
): Promise<void> {
  const status = await postDelivery(w.url, `hook-${org}`, delivery(org, `hook-${org}`, events));
  if (status !== 204) throw new Error(`delivery answered ${status}`);
  const store = w.hooklog.store!;
  const ids = events.map((e) => String(e.uuid));
  await waitFor(
    async () =>
      Number(
        (
          await store.query<{ n: string }>(
            `SELECT count() AS n FROM ${store.database}.events WHERE org = {org:String} AND uuid IN {ids:Array(String)}`,
            { org, ids },
          )
        )[0]?.n,
      ),
    { until: (n) => n >= new Set(ids).size, what: `events of ${org} in ClickHouse`, timeoutMs: 60_000 },
  );
}

/** Delivers events to an org's hook and waits until the alerts they raise are in ClickHouse. */
export async function deliverAndAlert(
  w: ConsoleWorld,
  org: string,
  events: ReadonlyArray<Record<string, unknown>>,
): Promise<string[]> {
  // The alerts and the events land by different consumers (alerting, the sink): a page that shows both (a user's
  // alerts beside their events) is only asked once both are in, or it races the sink.
  await deliverEvents(w, org, events);
  const store = w.hooklog.store!;
  const ids = events.map((e) => String(e.uuid));
  return waitFor(
    async () => {
      const rows = await store.query<{ alert_id: string }>(
        `SELECT alert_id FROM ${store.database}.alerts FINAL WHERE org = {org:String} AND hasAny(event_ids, {ids:Array(String)})`,
        { org, ids },
      );
      return rows.map((r) => r.alert_id);
    },
    { until: (alerts) => alerts.length >= events.length, what: `alerts of ${org}`, timeoutMs: 60_000 },
  );
}

export interface Signed {
  readonly cookie: string;
  readonly csrf: string;
}

const setCookies = (res: Response): string[] => res.headers.getSetCookie();
const cookieValue = (res: Response, name: string) =>
  setCookies(res)
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith(`${name}=`));

/** Signs `user` in through the real flow with fetch (no browser): the session cookie and its CSRF token. */
export async function signIn(w: { url: string }, user: SimUser): Promise<Signed> {
  const start = await fetch(`${w.url}/console/auth/login?return_to=/console/alerts`, { redirect: 'manual' });
  const login = cookieValue(start, 'hooklog_login');
  const authorize = start.headers.get('location');
  if (start.status !== 302 || !login || !authorize) throw new Error(`login start answered ${start.status}`);
  const form = await (await fetch(authorize)).text();
  const txn = /name="txn" value="([^"]+)"/.exec(form)?.[1];
  if (!txn) throw new Error('no sign-in form');
  const posted = await fetch(new URL('/oauth2/v1/authorize/login', authorize), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ txn, username: user.login, password: user.password }),
  });
  const callback = posted.headers.get('location');
  if (!callback) throw new Error(`the org's login answered ${posted.status}`);
  const done = await fetch(callback, { redirect: 'manual', headers: { cookie: login } });
  const cookie = cookieValue(done, 'hooklog_session');
  if (done.status !== 302 || !cookie) throw new Error(`callback answered ${done.status}: ${await done.text()}`);
  const me = (await (await fetch(`${w.url}/console/api/me`, { headers: { cookie } })).json()) as { csrf: string };
  return { cookie, csrf: me.csrf };
}

/** Changes alerts as the console page does: JSON, the session cookie, the CSRF token, the console's Origin. */
export function postChange(
  w: { url: string },
  s: Signed,
  body: unknown,
  extra: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${w.url}/console/api/alerts/changes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: s.cookie, 'x-csrf-token': s.csrf, origin: w.url, ...extra },
    body: JSON.stringify(body),
  });
}

/** A time as ClickHouse's DateTime64 text (UTC). */
export const chTime = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

let alertSeq = 0;
/**
 * `n` alert rows of `rule` in `org` as alerting's ClickHouse output writes them
 * (consumers/alerting/outputs/clickhouse.ts), spread over the last hour, keyed
 * by a user each: for lists of thousands of alerts (the rule path has tests of
 * its own). `over` sets fields of the i-th.
 */
export function alertRows(
  org: string,
  rule: string,
  title: string,
  n: number,
  over: (i: number) => object = () => ({}),
): Array<Record<string, unknown>> {
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => {
    const id = `${org}-${rule}-${String(alertSeq++).padStart(8, '0')}`;
    return {
      event_time: chTime(now - 3_600_000 + Math.floor((i * 7919) % 3_000_000)),
      first_event_time: chTime(now - 3_600_000),
      alert_id: id,
      rule_id: rule,
      rule_title: title,
      severity: 'medium',
      kind: 'match',
      org,
      group_key: JSON.stringify([`user${i}@${org}.example`]),
      event_count: 1 + (i % 13),
      event_ids: [`e-${id}`],
      ...over(i),
    };
  });
}

/** Inserts alert rows into the world's store, as the output's inserts do. */
export async function insertAlerts(w: ConsoleWorld, rows: readonly object[]): Promise<void> {
  const store = w.hooklog.store!;
  for (let i = 0; i < rows.length; i += 5000) await store.insertJson('alerts', rows.slice(i, i + 5000));
}
