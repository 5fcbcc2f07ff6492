/**
 * `hooklog alert`: the alerting consumer as its own process (stream, store
 * for the alerts table, no HTTP). With Kafka it runs beside `hooklog start`
 * under its own client id (so its transactional id differs); the embedded
 * log belongs to one process, so there alerting runs inside `hooklog start`.
 */
import type { Config } from './config/schema.js';
import { loadConfig } from './config/load.js';
import { HooklogError } from '../platform/errors.js';
import { refuseBesideRunningHooklog } from '../platform/data-dir.js';
import { createLogger, type Logger } from '../platform/log.js';
import { migrate, openStore, type Store, storeOptions } from '../platform/store/index.js';
import { ensureHooklogTopics, openStream } from '../platform/stream/open.js';
import { loadAllRules, startAlerting, type Alerting } from '../consumers/alerting/index.js';
import type { QueryResolver } from '../consumers/alerting/scheduled.js';
import { openIpLists } from './ip-lists.js';

/** Named analytics queries for a database (the CLI passes analytics' prepareQuery). */
export type NamedQueries = (
  name: string,
  database: string,
  params: Readonly<Record<string, string>>,
) => ReturnType<QueryResolver>;

/** Starts alerting from a whole hooklog config; `store` is opened here unless given. */
export async function startAlertingFromConfig(
  config: Config,
  logger: Logger,
  store?: Store,
  namedQueries?: NamedQueries,
): Promise<Alerting> {
  const a = config.alerting;
  if (!a) throw new HooklogError('CONFIG_INVALID', 'no `alerting:` section in the config');
  const lists = openIpLists(config, logger);
  const stream = await openStream(config, logger);
  let ownStore: Store | undefined;
  try {
    const topics = await ensureHooklogTopics(stream, config);
    // The store: for the alerts table, and for scheduled rules if this process runs any (only then:
    // embedded ClickHouse admits one process, and `hooklog start` may hold it).
    const scheduled =
      a.scheduled &&
      loadAllRules(
        { rules: a.rules, ruleFiles: a.rule_files, sigmaPaths: a.sigma_paths, rulePaths: a.rule_paths },
        { placeholders: a.sigma_placeholders, lists },
      ).some((r) => r.kind === 'scheduled');
    if ((a.clickhouse || scheduled) && !store) {
      ownStore = openStore(storeOptions(config, logger));
      await migrate(ownStore, logger);
    }
    const alerting = await startAlerting({
      config: a,
      lists,
      stream,
      topicPrefix: config.stream.topic_prefix,
      partitions: config.stream.partitions,
      logsTopic: topics.logs,
      deadletterTopic: topics.deadletter,
      logger,
      ...((store ?? ownStore) ? { store: (store ?? ownStore)! } : {}),
      ...(namedQueries
        ? {
            resolveQuery: (name: string, params: Readonly<Record<string, string>>) =>
              namedQueries(name, (store ?? ownStore)?.database ?? config.store.database, params),
          }
        : {}),
    });
    return {
      ...alerting,
      counters: alerting.counters,
      stop: async () => {
        await alerting.stop();
        await ownStore?.close();
        await stream.close();
        lists.stop();
      },
    };
  } catch (err) {
    lists.stop();
    await ownStore?.close();
    await stream.close();
    throw err;
  }
}

/** `hooklog alert`: run until SIGINT/SIGTERM. */
export async function runAlert(configPath: string | undefined, namedQueries?: NamedQueries): Promise<void> {
  const { config } = loadConfig(configPath);
  // The embedded log admits one process: beside a running hooklog, say so at once (it runs alerting itself).
  if (!config.stream.kafka) await refuseBesideRunningHooklog(config.data_dir, 'the embedded log');
  const logger = createLogger({
    level: config.log_level,
    format: config.log.format,
    repeatIntervalS: config.log.repeat_interval_s,
  });
  // A separate process must not share the main process's Kafka client (and transactional) id.
  const own: Config = config.stream.kafka
    ? {
        ...config,
        stream: {
          ...config.stream,
          kafka: { ...config.stream.kafka, client_id: `${config.stream.kafka.client_id}-alert` },
        },
      }
    : config;
  const alerting = await startAlertingFromConfig(own, logger, undefined, namedQueries);
  process.stderr.write(`hooklog alert: ${alerting.rules.length} rules on ${config.stream.topic_prefix}.logs\n`);
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await alerting.stop();
    // Ordered stop done; exit explicitly for the same reason as `hooklog start`
    // (cli/start.ts): kafkajs can leave reconnect timers behind its disconnect().
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
}
