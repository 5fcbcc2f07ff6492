/**
 * A fleet agrees on alert states: two hooklog instances on one Kafka cluster
 * (this process and a `hooklog start` child, each with its own embedded
 * ClickHouse and its own sink group, so each store is written only from the
 * stream), one sign-in. An analyst's change
 * made on the first instance shows on the second, because it travels as a
 * record on `<prefix>.alert-states`, not as a write to one store; the session
 * signed by one instance is accepted by the other (same session secret).
 * A sign-out on one instance, or `hooklog console revoke --user` from the
 * built CLI, ends the session on both within a second: a revocation record on
 * `<prefix>.console-sessions`, which every instance watches. A search saved,
 * renamed or deleted on one instance is listed so on the other: a record on
 * `<prefix>.saved-searches`, which each instance's sink writes to its store.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { kafkaBrokers } from '../test/kafka/inject.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../test/support/cli.js';
import { randomName, waitFor } from '../test/support/wait.js';
import {
  consoleConfigInput,
  deliverAndAlert,
  failedSignIn,
  freePort,
  ORG_A,
  postChange,
  signIn,
  startConsoleWorld,
  startSimulatedIdp,
  USERS,
  type ConsoleWorld,
  type Signed,
} from './testing.js';

let one: ConsoleWorld | undefined;
let daemon: Daemon | undefined;
let idp: Awaited<ReturnType<typeof startSimulatedIdp>> | undefined;
let first: ConsoleWorld;
let two: { url: string };
let configPath: string;

beforeAll(async () => {
  const brokers = kafkaBrokers();
  const ports = [await freePort(), await freePort()];
  idp = await startSimulatedIdp(ports.map((p) => `http://127.0.0.1:${p}/console/auth/callback`));
  const topicPrefix = randomName('fleet');
  first = await startConsoleWorld({ kafkaBrokers: brokers, topicPrefix, sim: idp, port: ports[0] });
  one = first;
  const input = consoleConfigInput({ kafkaBrokers: brokers, topicPrefix, port: ports[1]!, issuer: idp.sim.url });
  configPath = join(String(input.data_dir), '..', 'hooklog.yaml');
  writeFileSync(configPath, stringify(input));
  daemon = await startDaemon(['--config', configPath]);
  two = { url: daemon.url };
}, 180_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  await one?.stop();
  await idp?.sim.stop();
});

/** `GET /console/api/me` with `s`'s cookie on each instance: the statuses, first then second. */
const meOnBoth = (s: Signed) =>
  Promise.all(
    [first, two].map(async (w) => (await fetch(`${w.url}/console/api/me`, { headers: { cookie: s.cookie } })).status),
  );

/** Waits (polling) until `s` is refused on both instances; the time that took from `since`, in ms. */
async function refusedOnBoth(s: Signed, since: number): Promise<number> {
  await waitFor(() => meOnBoth(s), {
    until: (st) => st.every((x) => x === 401),
    what: 'the old cookie refused on both instances',
    intervalMs: 10,
    timeoutMs: 10_000,
  });
  return Date.now() - since;
}

describe('console in a fleet', () => {
  it("shows an analyst's change made on one instance on another", async () => {
    const ids = await deliverAndAlert(first, ORG_A, [failedSignIn('grace@a.example')]);
    const id = ids[0]!;
    // The second instance's store has the alert from the stream too.
    const alice = await signIn(first, USERS.alice);
    // The alert as an instance's API shows it, or the status it answered instead.
    type Alert = { alert: { status: string; resolution: string }; history: unknown[] };
    const getOn = (w: { url: string }) => async () => {
      const res = await fetch(`${w.url}/console/api/alerts/${id}`, { headers: { cookie: alice.cookie } });
      return res.status === 200 ? ((await res.json()) as Alert) : { answered: res.status };
    };
    const before = await waitFor(getOn(two), {
      until: (d): d is Alert => 'alert' in d,
      what: 'the alert on the second instance',
      timeoutMs: 60_000,
    });
    expect(before.alert.status).toBe('open');

    const res = await postChange(first, alice, {
      alert_ids: [id],
      action: 'close',
      resolution: 'benign',
      note: 'known VPN',
    });
    expect(res.status).toBe(200);
    const after = await waitFor(getOn(two), {
      until: (d): d is Alert => 'alert' in d && d.alert.status === 'closed',
      what: 'the change on the second instance',
      timeoutMs: 60_000,
    });
    expect(after.alert.resolution).toBe('benign');
    expect(after.history).toHaveLength(1);
    // And a change made on the second is seen by the first: one record stream, every store.
    const onTwo = await postChange(two, { ...alice }, { alert_ids: [id], action: 'reopen' }, { origin: two.url });
    expect(onTwo.status).toBe(200);
    await waitFor(getOn(first), {
      until: (d) => 'alert' in d && d.alert.status === 'open',
      what: 'the reopen on the first instance',
      timeoutMs: 60_000,
    });
  }, 240_000);

  it('lists a search saved on one instance on another, and its rename and delete', async () => {
    const alice = await signIn(first, USERS.alice);
    type Listed = { id: string; name: string; filter: string; range: unknown };
    const savedOn = (w: { url: string }) => async () => {
      const res = await fetch(`${w.url}/console/api/saved-searches?org=${ORG_A}`, {
        headers: { cookie: alice.cookie },
      });
      return res.status === 200 ? ((await res.json()) as { saved: Listed[] }).saved : [];
    };
    const send = (w: { url: string }, method: string, path: string, body?: unknown) =>
      fetch(`${w.url}${path}`, {
        method,
        headers: {
          cookie: alice.cookie,
          'x-csrf-token': alice.csrf,
          origin: w.url,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const name = randomName('failures');
    const saved = await send(first, 'POST', '/console/api/saved-searches', {
      org: ORG_A,
      name,
      filter: 'outcome.result eq "FAILURE"',
      range: { last: '7d' },
      fields: ['eventType'],
      facets: [],
    });
    expect(saved.status).toBe(200);
    const { id } = (await saved.json()) as { id: string };
    const onTwo = await waitFor(savedOn(two), {
      until: (l) => l.some((s) => s.id === id),
      what: 'the saved search on the second instance',
      timeoutMs: 60_000,
    });
    expect(onTwo.find((s) => s.id === id)).toMatchObject({
      name,
      filter: 'outcome.result eq "FAILURE"',
      range: { last: '7d' },
    });
    // Renamed on the second, deleted on the first: each instance lists what the other did.
    expect((await send(two, 'POST', `/console/api/saved-searches/${id}`, { name: `${name} (renamed)` })).status).toBe(
      200,
    );
    await waitFor(savedOn(first), {
      until: (l) => l.some((s) => s.id === id && s.name === `${name} (renamed)`),
      what: 'the rename on the first instance',
      timeoutMs: 60_000,
    });
    expect((await send(first, 'DELETE', `/console/api/saved-searches/${id}`)).status).toBe(200);
    await waitFor(savedOn(two), {
      until: (l) => !l.some((s) => s.id === id),
      what: 'the delete on the second instance',
      timeoutMs: 60_000,
    });
  }, 240_000);

  it('ends a signed-out session on every instance within a second', async () => {
    const bob = await signIn(first, USERS.bob);
    // Both instances take the session (the second has read the revocations topic too).
    await waitFor(() => meOnBoth(bob), { until: (st) => st.every((x) => x === 200), what: 'the session on both' });
    const out = await fetch(`${first.url}/console/auth/logout`, {
      method: 'POST',
      headers: { cookie: bob.cookie, 'x-csrf-token': bob.csrf, origin: first.url },
    });
    expect(out.status).toBe(204);
    expect(await refusedOnBoth(bob, Date.now())).toBeLessThan(1000);
    // And it stays refused: the view keeps the revocation.
    expect(await meOnBoth(bob)).toEqual([401, 401]);
  }, 60_000);

  it('ends every session of a user with `hooklog console revoke --user`, on every instance within a second', async () => {
    const [a1, a2] = [await signIn(first, USERS.alice), await signIn(two, USERS.alice)];
    const vera = await signIn(first, USERS.vera);
    await waitFor(() => Promise.all([meOnBoth(a1), meOnBoth(a2)]), {
      until: (st) => st.flat().every((x) => x === 200),
      what: "alice's two sessions on both",
    });
    const ran = await runCli(
      ['--config', configPath, 'console', 'revoke', '--user', USERS.alice.login, '--by', 'sec-lead'],
      {},
      undefined,
      {
        built: true,
      },
    );
    const appended = Date.now();
    expect(ran.stderr).toBe('');
    expect(ran.stdout).toMatch(/^revoked every session of "alice@a\.example" begun up to \S+Z\n$/);
    expect(ran.code).toBe(0);
    // The CLI's own process start is not the bound: from the moment it is done, both sessions end within a second.
    expect(await refusedOnBoth(a1, appended)).toBeLessThan(1000);
    expect(await refusedOnBoth(a2, appended)).toBeLessThan(1000);
    // Another user's session holds, and alice may sign in again.
    expect(await meOnBoth(vera)).toEqual([200, 200]);
    expect(await meOnBoth(await signIn(first, USERS.alice))).toEqual([200, 200]);
  }, 120_000);
});
