/**
 * Shared plumbing of the response end-to-end tests (real `hooklog start`
 * processes): simulated orgs that take SETs (verified against the JWKS they
 * fetch from hooklog's own well-known URL) and management actions, answering
 * one token per instance so they can tell who called; the config sections; a
 * Kafka stream of the test's own to append risk changes as the risk state does.
 */
import { createServer } from 'node:net';
import { partitionFor } from '../../platform/stream/embedded/partitioner.js';
import type { Stream } from '../../platform/stream/types.js';
import { riskTopics } from '../../schemas/risk.js';
import { waitFor } from '../support/wait.js';
import { TEST_SET_KEY } from '../../consumers/response/testing.js';
import { SecurityEventsApi, SimulatedOrg, UsersApi } from '../simulated-org/index.js';

export interface ResponseOrg {
  readonly id: string;
  readonly sim: SimulatedOrg;
  readonly sets: SecurityEventsApi;
  readonly users: UsersApi;
}

/** A port free now, for an instance whose URL (the SET issuer) must be known before it starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * `n` orgs whose keys spread over every one of `partitions` partitions (round-robin), each registering
 * `issuer` as its security events provider, with users ann and bob.
 */
export async function startResponseOrgs(
  n: number,
  partitions: number,
  issuer: string,
  tokens: readonly string[],
): Promise<ResponseOrg[]> {
  const suffix = Math.random().toString(36).slice(2, 7);
  const ids: string[] = [];
  for (let i = 0; ids.length < n; i++) {
    const id = `org${i}-${suffix}`;
    if (partitionFor(id, partitions) === ids.length % partitions) ids.push(id);
  }
  return Promise.all(ids.map((id) => startResponseOrg(id, issuer, tokens)));
}

/** One org registering `issuer` as its security events provider, with users ann, bob and cid (00u<name>). */
export async function startResponseOrg(id: string, issuer: string, tokens: readonly string[]): Promise<ResponseOrg> {
  const sim = await SimulatedOrg.start({
    auth: { ssws: [...tokens] },
    rateLimit: { management: { limit: 20, windowMs: 1_000 } },
  });
  const sets = new SecurityEventsApi({ issuer, wellKnownUrl: `${issuer}/.well-known/ssf-configuration` });
  const users = new UsersApi();
  for (const name of ['ann', 'bob', 'cid']) users.addUser(`00u${name}`, `${name}@${id}.example`);
  sim.use(sets).use(users);
  return { id, sim, sets, users };
}

/** The `orgs:` and `response:` sections: SETs from `issuer`, clear_sessions when a user's risk turns high. */
export function responseSections(
  orgs: readonly ResponseOrg[],
  issuer: string,
  group: string,
  mode: 'off' | 'dry_run' | 'on' = 'on',
): Record<string, unknown> {
  return {
    orgs: orgs.map((o) => ({
      id: o.id,
      base_url: o.sim.url,
      auth: { ssws: { token: '${ORG_TOKEN}' } },
      request_timeout_ms: 5_000,
      system_log: { enabled: false },
      management: { rate_limit_share: 0.5 },
    })),
    response: {
      group,
      transmitter: { issuer, private_key: TEST_SET_KEY },
      actions: { on_level: { high: ['clear_sessions'] } },
      orgs: orgs.map((o) => ({ org: o.id, actions: { mode, allow: ['clear_sessions'] } })),
    },
  };
}

/** Jtis whose copies are not all the same bytes (must stay empty: a resend is byte-identical). */
export function changedResends(sets: SecurityEventsApi): string[] {
  const first = new Map<string, string>();
  const bad: string[] = [];
  for (const s of sets.accepted) {
    const seen = first.get(s.jti);
    if (seen === undefined) first.set(s.jti, s.token);
    else if (seen !== s.token) bad.push(s.jti);
  }
  return bad;
}

/**
 * Makes the topics hooklog reads at start (the alerts topic's end offsets for the risk fold, the risk topic for the
 * token hook's view) and waits for their leaders: on a topic just made, by another process or by itself, a read
 * before the broker elected the leaders fails hooklog's start (STREAM_UNAVAILABLE NOT_LEADER_FOR_PARTITION; a
 * start-up race outside the response, noted on the issue).
 */
export async function makeTopicsReadAtStart(stream: Stream, prefix: string, partitions: number): Promise<void> {
  const alerts = `${prefix}.alerts`;
  const risk = riskTopics(prefix).state;
  await stream.ensureTopics([
    { name: alerts, partitions },
    { name: risk, partitions, compacted: true },
  ]);
  for (const topic of [alerts, risk])
    await waitFor(async () => (await stream.latestOffsets(topic)).size, {
      until: (n) => n === partitions,
      what: `${topic} led`,
    });
}
