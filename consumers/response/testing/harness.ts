/**
 * The response component in-process on real parts, for its integration tests:
 * the Kafka broker, the simulated org with its security-events and user-actions
 * modules (verifying SETs against the JWKS it fetches from hooklog's
 * well-known URL, served here), collectors on the component's topics, and an
 * `append` of risk changes as the risk state writes them.
 */
import { silentLogger } from '../../../platform/log.js';
import { Header } from '../../../platform/stream/headers.js';
import { openKafkaStream } from '../../../platform/stream/kafka/index.js';
import type { Stream } from '../../../platform/stream/types.js';
import { riskTopics, type RiskChange } from '../../../schemas/risk.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import { Collector } from '../../../test/simulated-org/harness.js';
import { SecurityEventsApi, SimulatedOrg, UsersApi } from '../../../test/simulated-org/index.js';
import { randomName } from '../../../test/support/wait.js';
import { startResponse, type Response } from '../index.js';
import { responseTopics } from '../records.js';
import { loadSetSigner } from '../signer.js';
import { responseConfig, startProvider, TEST_SET_KEY } from '../testing.js';

export const FAST = {
  setTransient: { initialMs: 20, multiplier: 2, maxMs: 200, retries: 2, jitter: 0 },
  actionTransient: { initialMs: 20, multiplier: 2, maxMs: 200, retries: 2, jitter: 0 },
};

/** What set-ups opened, closed by `cleanUp` (call it in afterEach). */
const cleanups: Array<() => Promise<void>> = [];
export async function cleanUp(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c();
}

export async function setUp(
  opts: {
    triggers?: Record<string, unknown>;
    org?: Record<string, unknown>;
    audience?: string;
    /** A broker of the test's own (one it restarts); default the run's shared broker. */
    brokers?: string[];
    /** What the component is given in place of the stream (a fault injector around it); collectors read the real one */
    wrapStream?: (stream: Stream) => Stream;
  } = {},
) {
  const provider = await startProvider();
  cleanups.push(() => provider.close());
  const sim = await SimulatedOrg.start({ rateLimit: { management: { limit: 10, windowMs: 1_000 } } });
  cleanups.push(() => sim.stop());
  const sets = new SecurityEventsApi({
    issuer: provider.url,
    wellKnownUrl: `${provider.url}/.well-known/ssf-configuration`,
    ...(opts.audience ? { audience: opts.audience } : {}),
  });
  const users = new UsersApi();
  sim.use(sets).use(users);
  users.addUser('00uann', 'ann@acme.test');
  users.addUser('00ubob', 'bob@acme.test');
  const org = randomName('org').replaceAll('_', '-');
  const config = responseConfig(
    [{ id: org, url: sim.url }],
    {
      group: randomName('resp'),
      transmitter: { issuer: provider.url, private_key: TEST_SET_KEY },
      actions: opts.triggers ?? {},
      orgs: [{ org, ...opts.org }],
    },
    // Half of each 10-per-second bucket, never its last request.
    {},
  );
  const signer = await loadSetSigner(config.response!.transmitter!);
  provider.serve(signer);
  const prefix = randomName('resp');
  const stream = await openKafkaStream({
    brokers: opts.brokers ?? kafkaBrokerList(),
    clientId: randomName('resp'),
    logger: silentLogger(),
  });
  cleanups.push(() => stream.close());
  const deadletter = `${prefix}.deadletter`;
  await stream.ensureTopics([{ name: deadletter, partitions: 1 }]);
  const identities = new Map(config.orgs.map((o) => [o.id, { ...o, management: { rate_limit_share: 0.5 } }]));
  const start = () =>
    startResponse({
      config: config.response!,
      signer,
      identities,
      stream: opts.wrapStream ? opts.wrapStream(stream) : stream,
      topicPrefix: prefix,
      partitions: 2,
      deadletterTopic: deadletter,
      logger: silentLogger(),
      policies: FAST,
    });
  let running: Response | null = await start();
  cleanups.push(async () => void (await running?.stop()));
  const topics = responseTopics(prefix);
  const actions = await Collector.start(stream, topics.actions);
  const deliveries = await Collector.start(stream, topics.deliveries);
  const letters = await Collector.start(stream, deadletter);
  cleanups.push(async () => {
    await actions.stop();
    await deliveries.stop();
    await letters.stop();
  });
  const append = (...changes: RiskChange[]) =>
    stream.append(
      riskTopics(prefix).changes,
      changes.map((c) => ({ key: c.org, value: Buffer.from(JSON.stringify(c)), headers: { [Header.org]: c.org } })),
    );
  return {
    sim,
    sets,
    users,
    org,
    stream,
    prefix,
    append,
    actions,
    deliveries,
    letters,
    running: () => running,
    topics,
    /** Stops the consumers (in-flight calls are aborted, their results unrecorded: a crash, as the records see it). */
    async stop() {
      const r = running;
      running = null;
      await r?.stop();
    },
    async restart() {
      await running?.stop();
      running = await start();
    },
  };
}
