import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Config } from './config/schema.js';
import type { Role } from '../platform/config/fleet.js';
import type { Logger } from '../platform/log.js';
import { openStore, migrate, storeOptions, type Store } from '../platform/store/index.js';
import { ensureHooklogTopics, openStream } from '../platform/stream/open.js';
import type { Topics } from '../platform/stream/headers.js';
import type { Stream } from '../platform/stream/types.js';
import { startClickHouseSink } from '../consumers/clickhouse-sink/index.js';
import { riskChangesPipeline, startAlerting } from '../consumers/alerting/index.js';
import { riskTopics } from '../schemas/risk.js';
import { prepareQuery } from '../analytics/run.js';
import { startIngest } from '../ingest/index.js';
import { legacyEventsPipeline } from '../ingest/legacy-events/rows.js';
import { createApp, type AppDeps } from './app.js';
import { servedUrls } from './routes.js';
import { startTokenHooks, tokenDecisionsPipeline } from '../receivers/token-hook/index.js';
import { startSsfReceivers } from '../receivers/ssf/routes.js';
import { securityEventsPipeline } from '../receivers/ssf/security-event-row.js';
import { collectProcessMetrics } from '../platform/metrics.js';
import { applyRetention } from '../analytics/retention.js';
import { registerCoverageMetrics } from '../analytics/coverage-metrics.js';
import { prepareResponse, startResponseRole } from './response.js';
import { alertStatesPipeline, alertStatesTopic, consoleSessionsTopic } from '../console/index.js';
import { consoleDeps } from './console.js';
import { desiredHooks } from '../receivers/registration/desired.js';
import { startHookWatch } from '../receivers/registration/watch.js';
import { openIpLists } from './ip-lists.js';

export interface Running {
  readonly stream: Stream;
  /** The store, when a role here needs it (sink; receivers serving the query API). */
  readonly store: Store | null;
  readonly topics: Topics;
  readonly roles: readonly Role[];
  /** The URL the HTTP server listens on (port resolved when configured as 0). */
  readonly url: string;
  /** Every URL this process serves (cli/routes.ts), for the start banner. */
  readonly urls: ReturnType<typeof servedUrls>;
  stop(): Promise<void>;
}

/**
 * Starts the components of the configured roles (`roles`, or `--roles`) in one
 * process, in dependency order: stream and topics; the store and migrations
 * when a role needs them; token hooks; HTTP; then the group consumers (sink,
 * alerting) and the pollers. HTTP comes before the consumer groups on purpose:
 * a hook needs only the stream behind it, and a group join can take seconds
 * (a restarted instance must take hooks again at once). `stop` undoes it in
 * reverse: stop taking requests, stop the pollers and consumers (leaving their
 * groups, so others take over at once), close.
 */
export async function startHooklog(
  config: Config,
  logger: Logger,
  roles: readonly Role[] = config.roles,
): Promise<Running> {
  const has = (r: Role) => roles.includes(r);
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
    // Alert triage travels on its own topic, which every sink of a console-enabled deployment writes to the store.
    const consoleOn = config.console.enabled;
    const statesTopic = alertStatesTopic(config.stream.topic_prefix);
    // Session revocations are compacted: a revocation in force is retained for instances that start later.
    const sessionsTopic = consoleSessionsTopic(config.stream.topic_prefix);
    if (consoleOn)
      await stream.ensureTopics([
        { name: statesTopic, partitions: config.stream.partitions },
        { name: sessionsTopic, partitions: config.stream.partitions, compacted: true },
      ]);
    // Embedded ClickHouse admits one process: only the roles that need the store open it. The query API
    // needs it before HTTP; the sink alone opens it after HTTP, so hooks are taken while migrations run.
    const apiOn = has('receivers') && (config.api.keys.length > 0 || consoleOn);
    let store = null as Store | null;
    const current = () => store;
    const openTheStore = async () => {
      const opened = openStore(storeOptions(config, logger));
      store = opened;
      closers.push(() => opened.close());
      await migrate(opened, logger);
      await applyRetention(opened, config.store.retention_days);
      await applyRetention(opened, config.store.retention_days, 'arrivals');
      return opened;
    };
    if (apiOn) await openTheStore();

    // Lookup tables loaded and key sets fetched before HTTP; stopped after it, flushing the audit queue.
    const tokenHooks = has('receivers')
      ? await startTokenHooks({
          hooks: config.token_hooks,
          stream,
          topic: topics.tokenDecisions,
          spoolDir: join(config.data_dir, 'token-hook-audit'),
          logger,
          riskTopic: riskTopics(config.stream.topic_prefix).state,
        })
      : undefined;
    if (tokenHooks) closers.push(() => tokenHooks.stop());
    // Each transmitter's SSF configuration and keys are read before HTTP (an unreachable one is retried by pushes).
    const ssf =
      has('receivers') && config.ssf_receivers.length > 0
        ? await startSsfReceivers(config.ssf_receivers, logger)
        : undefined;

    // The SET signing key is loaded (and checked) before anything is served; the response topics exist before the sink.
    const response = await prepareResponse(config, stream);
    const started = new Set<Role>(has('receivers') ? ['receivers'] : []);
    const roleProbe = (role: Role) => ({
      name: role,
      role,
      check: async () => {
        if (!started.has(role)) throw new Error('starting');
      },
    });
    collectProcessMetrics();
    // The console refuses sessions until it knows every revocation in force: read before HTTP.
    const consoleParts =
      consoleOn && has('receivers') && store ? consoleDeps(config, stream, store, logger) : undefined;
    if (consoleParts) {
      await consoleParts.revocations.start(stream, sessionsTopic, Date.now);
      closers.push(async () => consoleParts.revocations.stop());
    }
    const deps: AppDeps = {
      config,
      stream,
      topics,
      receivers: has('receivers'),
      ...(tokenHooks ? { tokenHooks } : {}),
      ...(ssf ? { ssf } : {}),
      ...(apiOn && store ? { store } : {}),
      ...(response.provider ? { ssfProvider: response.provider } : {}),
      ...(consoleParts ? { console: consoleParts } : {}),
      logger,
      probes: [
        { name: 'stream', check: () => stream.ping() },
        ...(has('sink') || apiOn
          ? [{ name: 'store', role: 'sink', check: () => current()?.ping() ?? Promise.reject(new Error('opening')) }]
          : []),
        ...roles.map(roleProbe),
      ],
    };
    const app = createApp(deps);
    // HTTP is stopped after the consumers and pollers (closers run in reverse), so /readyz answers while they stop.
    const server = await listen(config, app.callback());
    const { port } = server.address() as AddressInfo;
    const host = config.server.host === '0.0.0.0' ? '127.0.0.1' : config.server.host;
    const url = `${config.server.tls ? 'https' : 'http'}://${host}:${port}`;
    closers.push(() => closeServer(server));
    logger.info({ address: url, roles }, 'http listening');

    if (has('sink')) {
      const sinkStore = current() ?? (await openTheStore());
      const sink = await startClickHouseSink({
        stream,
        store: sinkStore,
        topics,
        group: config.sink.group,
        maxBatchRecords: config.sink.max_batch_records,
        maxBatchWaitMs: config.sink.max_batch_wait_ms,
        maxRecordBytes: config.sink.max_record_bytes,
        fetchMaxBytesPerPartition: config.sink.fetch_max_bytes_per_partition,
        extraPipelines: [
          tokenDecisionsPipeline(topics.tokenDecisions),
          legacyEventsPipeline(topics.legacyEvents),
          riskChangesPipeline(riskTopics(config.stream.topic_prefix).changes),
          securityEventsPipeline(topics.securityEvents),
          ...(consoleOn ? [alertStatesPipeline(statesTopic)] : []),
          ...response.pipelines,
        ],
        logger,
      });
      closers.push(() => sink.stop());
      const stopCoverageMetrics = registerCoverageMetrics(
        sinkStore,
        [...new Set(config.event_hooks.map((h) => h.org))],
        logger,
      );
      closers.push(async () => stopCoverageMetrics());
    }
    // The rule engine and webhooks run with the alerting role; the alerts table is written beside the store (sink
    // role).
    if (config.alerting?.enabled && (has('alerting') || (has('sink') && config.alerting.clickhouse))) {
      const alertStore = current();
      const lists = openIpLists(config, logger);
      closers.push(async () => lists.stop());
      const alerting = await startAlerting({
        config: config.alerting,
        lists,
        stream,
        ...(alertStore
          ? { store: alertStore, resolveQuery: (name, params) => prepareQuery(name, alertStore.database, params) }
          : {}),
        topicPrefix: config.stream.topic_prefix,
        partitions: config.stream.partitions,
        logsTopic: topics.logs,
        deadletterTopic: topics.deadletter,
        logger,
        parts: { engine: has('alerting'), webhooks: has('alerting'), clickhouse: has('sink') },
      });
      closers.push(() => alerting.stop());
    }
    if (config.response && has('alerting')) {
      const r = await startResponseRole(config, response, stream, topics.deadletter, logger);
      closers.push(() => r.stop());
    }
    if (has('pollers')) {
      // Pollers after the sink (what they store is drained) and stopped before it (reverse order).
      const budgetDir = join(config.data_dir, 'rate-budget');
      // Reconcile mode asks the store what is already there; a pollers-only process in a fleet has none.
      const pollStore = current();
      const ingest = await startIngest({
        orgs: config.orgs,
        stream,
        topics,
        logger,
        budgetDir,
        ...(pollStore ? { store: pollStore } : {}),
      });
      closers.push(() => ingest.stop());
      // The hooks hooklog registers, compared with what the service holds (drift metrics and the built-in alert).
      if (config.hook_registration.watch_interval_ms > 0 && desiredHooks(config).length > 0) {
        const watch = startHookWatch({
          config,
          stream,
          topic: topics.logs,
          logger,
          intervalMs: config.hook_registration.watch_interval_ms,
          budgetDir,
          seenPath: join(config.data_dir, 'hook-watch', 'seen.json'),
        });
        closers.push(() => watch.stop());
      }
    }
    for (const r of roles) started.add(r);

    const opened = current();
    logger.info(
      {
        url,
        roles,
        instance: config.instance_id ?? `${hostname()}-${process.pid}`,
        stream: stream.kind,
        store: opened?.kind ?? null,
        hooks: has('receivers') ? config.event_hooks.map((h) => h.id) : [],
        ssf_receivers: has('receivers') ? config.ssf_receivers.map((r) => r.id) : [],
      },
      'hooklog started',
    );
    return { stream, store: opened, topics, roles, url, urls: servedUrls(deps, url), stop: stopAll };
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
    ? createHttpsServer(
        {
          ...timeouts,
          handshakeTimeout: config.server.headers_timeout_ms,
          cert: readFileSync(tls.cert_path),
          key: readFileSync(tls.key_path),
        },
        handler,
      )
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
