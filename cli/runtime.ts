import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Config } from './config/schema.js';
import type { Logger } from '../platform/log.js';
import { openStore, migrate, storeOptions, type Store } from '../platform/store/index.js';
import { ensureHooklogTopics, openStream } from '../platform/stream/open.js';
import type { Topics } from '../platform/stream/headers.js';
import type { Stream } from '../platform/stream/types.js';
import { startClickHouseSink } from '../consumers/clickhouse-sink/index.js';
import { startAlerting } from '../consumers/alerting/index.js';
import { prepareQuery } from '../analytics/run.js';
import { startIngest } from '../ingest/index.js';
import { legacyEventsPipeline } from '../ingest/legacy-events/rows.js';
import { createApp } from './app.js';
import { startTokenHooks, tokenDecisionsPipeline } from '../receivers/token-hook/index.js';
import { collectProcessMetrics } from '../platform/metrics.js';
import { applyRetention } from '../analytics/retention.js';
import { registerCoverageMetrics } from '../analytics/coverage-metrics.js';

export interface Running {
  readonly stream: Stream;
  readonly store: Store;
  readonly topics: Topics;
  /** The URL the HTTP server listens on (port resolved when configured as 0). */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts every configured component in one process, in dependency order:
 * stream and topics, store and migrations, the ClickHouse sink, then HTTP
 * last, so nothing is acknowledged before the path behind it exists. `stop`
 * undoes it in reverse: stop taking requests, drain the sink, close.
 */
export async function startHooklog(config: Config, logger: Logger): Promise<Running> {
  const stream = await openStream(config, logger);
  const closers: Array<() => Promise<void>> = [() => stream.close()];
  const stopAll = async () => {
    for (const close of closers.splice(0).reverse()) {
      try {
        await close();
      } catch (err) {
        logger.error({ err }, 'error while stopping');
      }
    }
  };
  try {
    const topics = await ensureHooklogTopics(stream, config);
    const store = openStore(storeOptions(config, logger));
    closers.push(() => store.close());
    await migrate(store, logger);
    await applyRetention(store, config.store.retention_days);
    await applyRetention(store, config.store.retention_days, 'arrivals');
    const sink = await startClickHouseSink({
      stream,
      store,
      topics,
      group: config.sink.group,
      maxBatchRecords: config.sink.max_batch_records,
      maxBatchWaitMs: config.sink.max_batch_wait_ms,
      maxRecordBytes: config.sink.max_record_bytes,
      extraPipelines: [tokenDecisionsPipeline(topics.tokenDecisions), legacyEventsPipeline(topics.legacyEvents)],
      logger,
    });
    closers.push(() => sink.stop());
    // Alerting reads the same logs topic in its own group; stopped before the sink (reverse order).
    if (config.alerting?.enabled) {
      const alerting = await startAlerting({
        config: config.alerting, stream, store, topicPrefix: config.stream.topic_prefix, partitions: config.stream.partitions,
        logsTopic: topics.logs, deadletterTopic: topics.deadletter, logger,
        resolveQuery: (name, params) => prepareQuery(name, store.database, params),
      });
      closers.push(() => alerting.stop());
    }
    // Pollers after the sink (what they store is drained) and stopped before it (reverse order).
    const stopCoverageMetrics = registerCoverageMetrics(store, [...new Set(config.event_hooks.map((h) => h.org))], logger);
    closers.push(async () => stopCoverageMetrics());
    const budgetDir = join(config.data_dir, 'rate-budget');
    const ingest = await startIngest({ orgs: config.orgs, stream, topics, logger, budgetDir, store });
    closers.push(() => ingest.stop());

    // Lookup tables loaded and key sets fetched before HTTP; stopped after it, flushing the audit queue.
    const tokenHooks = await startTokenHooks({ hooks: config.token_hooks, stream, topic: topics.tokenDecisions, logger });
    closers.push(() => tokenHooks.stop());

    collectProcessMetrics();
    const app = createApp({
      config,
      stream,
      topics,
      tokenHooks,
      store,
      logger,
      probes: [
        { name: 'stream', check: () => stream.ping() },
        { name: 'store', check: () => store.ping() },
      ],
    });
    const server = await listen(config, app.callback());
    closers.push(() => closeServer(server));
    const { port } = server.address() as AddressInfo;
    const host = config.server.host === '0.0.0.0' ? '127.0.0.1' : config.server.host;
    const url = `${config.server.tls ? 'https' : 'http'}://${host}:${port}`;
    logger.info({ url, stream: stream.kind, store: store.kind, hooks: config.event_hooks.map((h) => h.id) }, 'hooklog started');
    return { stream, store, topics, url, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

function listen(config: Config, handler: Parameters<typeof createHttpServer>[1]): Promise<Server> {
  const tls = config.server.tls;
  // The service sends a whole request at once and gives a hook 3 s; a client that trickles its
  // headers or body is not the service (slowloris). Node enforces both time-outs only when it
  // sweeps its connections, every connectionsCheckingInterval (30 s by default): sweep often.
  const timeouts = {
    headersTimeout: config.server.headers_timeout_ms,
    requestTimeout: config.server.request_timeout_ms,
    connectionsCheckingInterval: Math.min(1000, config.server.headers_timeout_ms),
  };
  const server = tls
    ? createHttpsServer({ ...timeouts, handshakeTimeout: config.server.headers_timeout_ms, cert: readFileSync(tls.cert_path), key: readFileSync(tls.key_path) }, handler)
    : createHttpServer(timeouts, handler);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.server.port, config.server.host, () => resolve(server));
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
