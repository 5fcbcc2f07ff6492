/**
 * The response component (consumers/response/) in the process: its signing
 * key loaded once at start, the well-known documents it gives the HTTP app, the
 * sink pipelines of its tables, and the consumers that run with the alerting
 * role. Kept apart from runtime.ts so the composition reads as one line each.
 */
import { join } from 'node:path';
import type { Config } from './config/schema.js';
import type { Logger } from '../platform/log.js';
import type { ExtraPipeline } from '../platform/store/table-writer.js';
import type { Stream } from '../platform/stream/types.js';
import {
  actionsPipeline,
  deliveriesPipeline,
  loadSetSigner,
  responseTopics,
  startResponse,
  type Response,
  type SetSigner,
} from '../consumers/response/index.js';
import { ensureResponseTopics } from '../consumers/response/index.js';
import { JWKS_PATH, type SsfProvider } from '../receivers/ssf/well-known.js';

export interface PreparedResponse {
  readonly signer: SetSigner | null;
  /** What the HTTP app serves at the well-known URLs (with a transmitter configured). */
  readonly provider: SsfProvider | null;
  /** The sink's pipelines for the actions and ssf_deliveries tables. */
  readonly pipelines: readonly ExtraPipeline[];
}

/** Loads the key (a bad one fails the boot here) and creates the topics, before HTTP and the sink start. */
export async function prepareResponse(config: Config, stream: Stream): Promise<PreparedResponse> {
  const r = config.response;
  if (!r) return { signer: null, provider: null, pipelines: [] };
  await ensureResponseTopics(stream, config.stream.topic_prefix, config.stream.partitions);
  const topics = responseTopics(config.stream.topic_prefix);
  const signer = r.transmitter ? await loadSetSigner(r.transmitter) : null;
  return {
    signer,
    provider: signer
      ? { issuer: signer.issuer, jwksUri: r.transmitter!.jwks_uri ?? `${signer.issuer}${JWKS_PATH}`, jwks: signer.jwks }
      : null,
    pipelines: [actionsPipeline(topics.actions), deliveriesPipeline(topics.deliveries)],
  };
}

/** Starts the transmitter and the executor (the alerting role). */
export function startResponseRole(
  config: Config,
  prepared: PreparedResponse,
  stream: Stream,
  deadletterTopic: string,
  logger: Logger,
): Promise<Response> {
  return startResponse({
    config: config.response!,
    signer: prepared.signer,
    identities: new Map(config.orgs.map((o) => [o.id, o])),
    stream,
    topicPrefix: config.stream.topic_prefix,
    partitions: config.stream.partitions,
    deadletterTopic,
    logger,
    budgetDir: join(config.data_dir, 'rate-budget'),
  });
}
