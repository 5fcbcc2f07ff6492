/**
 * Response: from a user's risk change to what the org does about it. Two
 * consumers, each owning its partitions (one org is one partition, so one
 * sender per org in a fleet):
 *
 *   <prefix>.risk-changes ─▶ transmitter ─▶ decisions ─▶ <prefix>.actions ─▶ executor ─▶ management API
 *                                  └─▶ signed SET ─▶ POST /security/api/v1/security-events
 *
 * Start order: topics, then the executor (it reads what the transmitter
 * decides), then the transmitter. Stop in reverse.
 */
import type { OrgIdentity } from '../../platform/identity/config.js';
import type { IdpPolicies } from '../../platform/identity/policies.js';
import type { Logger } from '../../platform/log.js';
import type { Consumer, Stream } from '../../platform/stream/types.js';
import { riskTopics } from '../../schemas/risk.js';
import type { ResponseConfig } from './config.js';
import { executorHandler, initialExecutorState } from './executor.js';
import { orgManagement } from './management.js';
import { startOwnedConsumer } from './owned.js';
import { ResponseRetryPolicies, type ResponsePolicies } from './policies.js';
import { responseTopics } from './records.js';
import type { SetSigner } from './signer.js';
import { createResponseTelemetry, type ResponseCounters } from './telemetry.js';
import { initialTransmitterState, transmitterHandler } from './transmitter.js';

export { loadSetSigner, type SetSigner } from './signer.js';
export { responseTopics } from './records.js';
export { actionsPipeline, deliveriesPipeline } from './rows.js';

export interface ResponseOptions {
  readonly config: ResponseConfig;
  /** The signer loaded at start (null without `response.transmitter`). */
  readonly signer: SetSigner | null;
  /** Every configured org's identity (orgs:), by id. */
  readonly identities: ReadonlyMap<string, OrgIdentity>;
  readonly stream: Stream;
  readonly topicPrefix: string;
  readonly partitions: number;
  readonly deadletterTopic: string;
  readonly logger: Logger;
  /** `<data_dir>/rate-budget`: the org's management budgets, shared with every hooklog process of the host. */
  readonly budgetDir?: string;
  /** Tests shorten the waits. */
  readonly policies?: ResponsePolicies;
  readonly idpPolicies?: IdpPolicies;
}

export interface Response {
  readonly counters: Readonly<ResponseCounters>;
  stop(): Promise<void>;
}

/** The topics this component writes and reads, created if missing (risk-changes too: either side may start first). */
export async function ensureResponseTopics(stream: Stream, prefix: string, partitions: number) {
  const topics = responseTopics(prefix);
  await stream.ensureTopics([
    { name: riskTopics(prefix).changes, partitions },
    { name: topics.actions, partitions },
    { name: topics.deliveries, partitions },
    { name: topics.setsState, partitions, compacted: true },
    { name: topics.actionsState, partitions, compacted: true },
  ]);
  return topics;
}

export async function startResponse(o: ResponseOptions): Promise<Response> {
  const c = o.config;
  const telemetry = createResponseTelemetry(o.logger);
  const topics = await ensureResponseTopics(o.stream, o.topicPrefix, o.partitions);
  const orgs = new Map(c.orgs.map((x) => [x.org, x]));
  const management = orgManagement({
    identities: o.identities,
    orgs,
    logger: o.logger,
    ...(o.budgetDir ? { budgetDir: o.budgetDir } : {}),
    ...(o.idpPolicies ? { policies: o.idpPolicies } : {}),
  });
  const policies = o.policies ?? ResponseRetryPolicies;
  const abort = new AbortController();
  const consumers: Consumer[] = [];
  const stop = async () => {
    abort.abort();
    for (const consumer of consumers.splice(0).reverse()) await consumer.stop();
  };
  const onHandlerError = (topic: string) => (err: unknown, batch: { partition: number }, attempt: number) =>
    abort.signal.aborted || telemetry.batchFailed(topic, batch.partition, attempt, err);
  try {
    consumers.push(
      await startOwnedConsumer({
        stream: o.stream,
        topic: topics.actions,
        group: `${c.group}.actions`,
        stateTopic: topics.actionsState,
        initial: initialExecutorState,
        handle: executorHandler({ topics, orgs, management, policies, telemetry, signal: abort.signal }),
        onHandlerError: onHandlerError(topics.actions),
      }),
    );
    const changes = riskTopics(o.topicPrefix).changes;
    consumers.push(
      await startOwnedConsumer({
        stream: o.stream,
        topic: changes,
        group: `${c.group}.sets`,
        stateTopic: topics.setsState,
        initial: initialTransmitterState,
        handle: transmitterHandler({
          topics: { ...topics, deadletter: o.deadletterTopic },
          orgs,
          triggers: c.actions,
          signer: o.signer,
          eventType: c.transmitter?.event_type ?? '',
          management,
          policies,
          telemetry,
          signal: abort.signal,
        }),
        onHandlerError: onHandlerError(changes),
      }),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  telemetry.log.info(
    { orgs: c.orgs.map((x) => x.org), transmitter: o.signer ? { issuer: o.signer.issuer, kid: o.signer.kid } : null },
    'response started',
  );
  return { counters: telemetry.counters, stop };
}
