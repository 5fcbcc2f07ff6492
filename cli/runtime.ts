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
import { identityPipeline } from '../ingest/identity/rows.js';
import { identityTopic } from '../schemas/identity.js';
import { createApp, type AppDeps } from './app.js';
import { watchLoopStalls } from './loop-stalls.js';
import { servedUrls } from './routes.js';
import { startTokenHooks, tokenDecisionsPipeline } from '../receivers/token-hook/index.js';
import { startSsfReceivers } from '../receivers/ssf/routes.js';
import { securityEventsPipeline } from '../receivers/ssf/security-event-row.js';
import { collectProcessMetrics } from '../platform/metrics.js';
import { applyRetention } from '../analytics/retention.js';
import { registerCoverageMetrics } from '../analytics/coverage-metrics.js';
import { prepareResponse, startResponseRole } from './response.js';
import {
  alertStatesPipeline,
  alertStatesTopic,
  consoleSessionsTopic,
  savedSearchesPipeline,
  savedSearchesTopic,
} from '../console/index.js';
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
 * process, in dependency order: the embedded log (it waits for the previous
 * owner of data_dir); the store when a role needs it, whose embedded engine
 * loads and opens on a thread of its own (platform/store/chdb-thread.ts) while
 * the rest starts; HTTP, which answers 503 with Retry-After until the app is
 * ready (`startingHandler`); the Kafka stream and topics; token hooks; the app,
 * with the hook routes at once and the routes that read the store (query API,
 * console) answering 503 until its migrations have run; then, once the store is
 * ready, the group consumers (sink, alerting) and the pollers. HTTP comes
 * before the consumer groups and the store on purpose: a hook needs only the
 * stream behind it, while a group join can take seconds and embedded
 * ClickHouse's load and open take 0.3 s and more of CPU (a restarted instance
 * must take hooks again at once). Nothing of significance runs synchronously
 * on the event loop once HTTP listens: the loop's longest delay until started
 * is in the `hooklog started` line. `stop` undoes it in reverse: stop taking
 * requests, stop the pollers and consumers (leaving their groups, so others
 * take over at once), close.
 */
export async function startHooklog(
  config: Config,
  logger: Logger,
  roles: readonly Role[] = config.roles,
): Promise<Running> {
  const has = (r: Role) => roles.includes(r);
  const closers: Array<() => Promise<void>> = [];
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
    // The embedded log is opened first: it waits for the previous owner of data_dir to exit, and that owner
    // still holds the port and embedded ClickHouse until then. Kafka is opened once HTTP listens (below).
    const embeddedStream = config.stream.kafka ? null : await openStream(config, logger);
    if (embeddedStream) closers.push(() => embeddedStream.close());
    // Embedded ClickHouse is opened once the previous owner of data_dir has gone (the embedded log waited for it;
    // on Kafka, the engine's own lock refuses a second process). Loading its library (566 MB) and opening its data
    // directory are synchronous native calls of 0.3 s and more of CPU: on the event loop, before HTTP listens, they
    // delayed a restarted instance's first 204 by as much, and after it they would hold every delivery that
    // arrived meanwhile (204s past ack_timeout_ms). So they run on the store's own thread (platform/store/
    // chdb-thread.ts), which then runs every statement; `openStore` returns at once, and the store is used only
    // once its migrations have run (`ready` below), while the hooks are taken.
    const apiOn = has('receivers') && (config.api.keys.length > 0 || config.console.enabled);
    let store = null as Store | null;
    const current = () => store;
    if (has('sink') || apiOn) {
      const opened = openStore({ ...storeOptions(config, logger), thread: true });
      store = opened;
      closers.push(() => opened.close());
    }
    // From here on, nothing of significance runs synchronously (test/e2e/restart.test.ts bounds the loop until
    // started).
    // Until the stream behind the hooks is ready, every hook route answers 503 with Retry-After at once.
    const http = await listenStarting(config, logger);
    closers.push(() => closeServer(http.server));
    const stalls = watchLoopStalls();
    closers.push(async () => void stalls.stop());
    const { url } = http;
    logger.info({ address: url, roles }, 'http listening');
    // The store's schema, run as soon as its engine is open, beside the rest of the start: the query API and the
    // console answer 503 until then, the consumers and pollers start after it.
    const migrateTheStore = async (opened: Store) => {
      await migrate(opened, logger);
      await applyRetention(opened, config.store.retention_days);
      await applyRetention(opened, config.store.retention_days, 'arrivals');
      return opened;
    };
    const ready = store ? migrateTheStore(store) : null;
    let storeReady = false;
    // Awaited below; a start that fails before then closes the store under it, and reports its own error.
    ready?.then(
      () => (storeReady = true),
      () => undefined,
    );

    const stream = embeddedStream ?? (await openStream(config, logger));
    // Closed last, as the embedded one is: HTTP, the consumers and the store close before it.
    if (!embeddedStream) closers.unshift(() => stream.close());
    const topics = await ensureHooklogTopics(stream, config);
    // Alert triage travels on its own topic, which every sink of a console-enabled deployment writes to the store.
    const consoleOn = config.console.enabled;
    const statesTopic = alertStatesTopic(config.stream.topic_prefix);
    // Session revocations are compacted: a revocation in force is retained for instances that start later.
    const sessionsTopic = consoleSessionsTopic(config.stream.topic_prefix);
    // Saved searches are compacted by (org, id): each record carries the whole search, so the latest one is it.
    const savedTopic = savedSearchesTopic(config.stream.topic_prefix);
    if (consoleOn)
      await stream.ensureTopics([
        { name: statesTopic, partitions: config.stream.partitions },
        { name: sessionsTopic, partitions: config.stream.partitions, compacted: true },
        { name: savedTopic, partitions: config.stream.partitions, compacted: true },
      ]);

    // Lookup tables loaded and key sets fetched before the app is served; stopped after HTTP, flushing the audit
    // queue.
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
    // Each transmitter's SSF configuration and keys are read before the app is served (an unreachable one is
    // retried by pushes).
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
    // The console refuses sessions until it knows every revocation in force: read before the app is served.
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
      ...(apiOn && store ? { store, storeStarting: () => !storeReady } : {}),
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
    // HTTP is stopped after the consumers and pollers (closers run in reverse), so /readyz answers while they stop.
    http.serve(createApp(deps).callback());
    logger.info({ roles }, 'http serving');

    // Embedded ClickHouse admits one process: only the roles that need the store open it (above). What follows
    // writes or reads it: it starts once the store's migrations have run.
    if (ready) await ready;
    if (has('sink') && store) {
      const sinkStore = store;
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
          identityPipeline(identityTopic(config.stream.topic_prefix)),
          riskChangesPipeline(riskTopics(config.stream.topic_prefix).changes),
          securityEventsPipeline(topics.securityEvents),
          ...(consoleOn ? [alertStatesPipeline(statesTopic), savedSearchesPipeline(savedTopic)] : []),
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
        identityTopic: identityTopic(config.stream.topic_prefix),
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

    const held = stalls.stop();
    const opened = current();
    logger.info(
      {
        // The longest the event loop was held between listening and now (cli/loop-stalls.ts).
        start_loop_delay_max_ms: held.delayMaxMs,
        start_loop_busy_max_ms: held.busyMaxMs,
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

type Handler = NonNullable<Parameters<typeof createHttpServer>[1]>;

/** The HTTP server, listening from early in the start; `serve` hands it the app once what it needs is ready. */
interface StartingServer {
  readonly server: Server;
  readonly url: string;
  serve(app: Handler): void;
}

/**
 * Listens at once with the start-up answers (`startingHandler`), then serves the app given to `serve`. A
 * restarted instance so answers from its first moment: a hook gets a quick 503 with Retry-After (the service
 * retries it) instead of a refused connection or an answer that waits for the stream.
 */
async function listenStarting(config: Config, logger: Logger): Promise<StartingServer> {
  let handler: Handler = startingHandler(config.event_hook_receiver.retry_after_seconds);
  const server = await listen(config, (req, res) => handler(req, res));
  const { port } = server.address() as AddressInfo;
  const host = config.server.host === '0.0.0.0' ? '127.0.0.1' : config.server.host;
  const url = `${config.server.tls ? 'https' : 'http'}://${host}:${port}`;
  logger.debug({ address: url }, 'answering 503 until the stream is ready');
  return {
    server,
    url,
    serve: (app) => {
      handler = app;
    },
  };
}

/**
 * What a starting process answers before its stream can acknowledge: `/healthz` 200 (it is up), `/readyz` 503,
 * and everything else, the hook routes first, 503 with Retry-After, read nothing of the request, and touch
 * nothing that could wait.
 */
function startingHandler(retryAfterSeconds: number): Handler {
  const retryAfter = String(retryAfterSeconds);
  return (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    res.setHeader('content-type', 'application/json; charset=utf-8');
    if (path === '/healthz') {
      res.writeHead(200).end('{"status":"starting"}');
      return;
    }
    res.setHeader('Retry-After', retryAfter);
    if (path === '/readyz') {
      res.writeHead(503).end('{"status":"not ready","checks":{"start":"unavailable: starting"}}');
      return;
    }
    res.writeHead(503).end('{"error":"starting, retry later"}');
  };
}

function listen(config: Config, handler: Handler): Promise<Server> {
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
