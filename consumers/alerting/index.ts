/**
 * Alerting: rules on the live stream. Start order: compile rules (a bad rule
 * fails the boot, naming its file), ensure our topics, start the outputs
 * (they read `<prefix>.alerts`), then the engine on `<prefix>.logs`. Stop
 * in reverse: the engine first (no new alerts), then the outputs.
 */
import { join, resolve } from 'node:path';
import { assetPath } from '../../platform/assets.js';
import type { Logger } from '../../platform/log.js';
import type { Store } from '../../platform/store/index.js';
import type { Consumer, Stream } from '../../platform/stream/types.js';
import type { AlertingConfig } from './config.js';
import { startEngineConsumer } from './consumer.js';
import { startClickHouseOutput } from './outputs/clickhouse.js';
import { startWebhookOutput } from './outputs/webhook.js';
import { loadAllRules } from './rules/load.js';
import { ruleFilesUnder } from './rules/sources.js';
export { loadAllRules } from './rules/load.js';
export { riskChangesPipeline } from './risk/rows.js';
import type { CompiledRule } from './rules/types.js';
import { createAlertingTelemetry, type AlertingCounters } from './telemetry.js';
import type { RetryPolicy } from '../../platform/retry.js';
import { HooklogError } from '../../platform/errors.js';
import { startScheduler, type QueryResolver, type Scheduler } from './scheduled.js';
import { riskTopics } from '../../schemas/risk.js';
import { attachRisk } from './risk/declaration.js';
import { startRiskFold } from './risk/consumer.js';
import { createRiskTelemetry, type RiskCounters } from './risk/telemetry.js';
import type { IpListLookup } from '../../platform/iplists/lists.js';
import { identityTopic } from '../../schemas/identity.js';
import { IdentityView } from './identity/view.js';

export type { AlertingConfig } from './config.js';

/** `<prefix>.alerts` (public: one record per finding) and `<prefix>.alerting-state` (compacted checkpoints). */
export function alertingTopics(prefix: string) {
  return { alerts: `${prefix}.alerts`, state: `${prefix}.alerting-state` };
}

export interface AlertingOptions {
  readonly config: AlertingConfig;
  readonly stream: Stream;
  /** Needed when config.clickhouse is on. */
  readonly store?: Store;
  readonly topicPrefix: string;
  readonly partitions: number;
  readonly logsTopic: string;
  readonly deadletterTopic: string;
  readonly logger: Logger;
  /**
   * Which parts run here (roles, cli/roles.ts): the rule engine and webhooks with
   * the alerting role, the ClickHouse output (alerts topic → alerts table) with
   * the sink role, beside the process that owns the store. Default: all.
   */
  readonly parts?: { readonly engine: boolean; readonly webhooks: boolean; readonly clickhouse: boolean };
  /** Tests shorten webhook backoff. */
  readonly webhookRetryPolicy?: RetryPolicy;
  /** Named analytics queries for scheduled rules with `query:` (wired by the process that has them). */
  readonly resolveQuery?: QueryResolver;
  /** The IP lists rules test with `in list("name")` (enrichment.ip_lists); the caller reloads them. */
  readonly lists?: IpListLookup;
}

export interface Alerting {
  readonly rules: readonly CompiledRule[];
  readonly counters: Readonly<AlertingCounters>;
  /** The risk fold's counters (zero where it does not run). */
  readonly riskCounters: Readonly<RiskCounters>;
  readonly topics: ReturnType<typeof alertingTopics>;
  stop(): Promise<void>;
}

/**
 * The content hooklog ships (content/*.yaml: rules with their test cases), an
 * asset read from the package root (platform/assets.ts): the built-in rules,
 * `hooklog rules test --cases` (their cases sit in the same files) and the
 * tests all go through it, from source, from dist/ and in the image alike.
 */
export const CONTENT_DIR: string = assetPath('alertingContent');

/**
 * Rules every alerting consumer runs besides the configured ones: hooklog's
 * own health findings (content/hook-deliveries.yaml: a lost hook delivery),
 * read from the package's alerting content (platform/assets.ts).
 */
export const BUILTIN_RULE_FILES: readonly string[] = [join(CONTENT_DIR, 'hook-deliveries.yaml')];

/**
 * Every rule the alerting consumer runs: the built-in ones and the configured
 * ones, compiled, with the config's risk declarations attached. A built-in
 * file the config names too (in rule_files, or under a rule path such as the
 * shipped content directory, as docs/detect/rules.md advises) is loaded once: loading
 * it twice is a duplicate id. `hooklog check-config` calls this too, so a rule
 * that would stop `start` fails the check.
 */
export function loadConfiguredRules(c: AlertingConfig, lists?: IpListLookup): CompiledRule[] {
  const configured = new Set(
    [...c.rule_files, ...ruleFilesUnder([...c.rule_paths, ...c.sigma_paths])].map((f) => resolve(f)),
  );
  const ruleFiles = [...BUILTIN_RULE_FILES.filter((f) => !configured.has(f)), ...c.rule_files];
  const rules = loadAllRules(
    { rules: c.rules, ruleFiles, sigmaPaths: c.sigma_paths, rulePaths: c.rule_paths },
    { placeholders: c.sigma_placeholders, defaultSuppressMs: c.suppression_ms, ...(lists ? { lists } : {}) },
  );
  try {
    return attachRisk(rules, c.risk.rules);
  } catch (err) {
    throw new HooklogError('CONFIG_INVALID', (err as Error).message, { cause: err });
  }
}

export async function startAlerting(o: AlertingOptions): Promise<Alerting> {
  const c = o.config;
  const rules = loadConfiguredRules(c, o.lists);
  const telemetry = createAlertingTelemetry(o.logger);
  const riskTelemetry = createRiskTelemetry(o.logger);
  const topics = alertingTopics(o.topicPrefix);
  const risk = riskTopics(o.topicPrefix);
  await o.stream.ensureTopics([
    { name: topics.alerts, partitions: o.partitions },
    { name: topics.state, partitions: 1, compacted: true },
    { name: risk.state, partitions: o.partitions, compacted: true },
    { name: risk.changes, partitions: o.partitions },
    // Written by the identity sync; ensured here too so the engine's view can start before the sync's first run.
    { name: identityTopic(o.topicPrefix), partitions: o.partitions, compacted: true },
  ]);
  const abort = new AbortController();
  const outputs: Consumer[] = [];
  let scheduler: Scheduler | undefined;
  let engine: Consumer | undefined;
  let riskFold: Consumer | undefined;
  let identity: IdentityView | undefined;
  const stopAll = async (engine?: Consumer) => {
    await scheduler?.stop();
    await engine?.stop();
    identity?.stop();
    await riskFold?.stop();
    abort.abort();
    for (const out of outputs.splice(0)) await out.stop();
  };
  try {
    const parts = o.parts ?? { engine: true, webhooks: true, clickhouse: true };
    if (c.clickhouse && parts.clickhouse) {
      if (!o.store) throw new HooklogError('CONFIG_INVALID', 'alerting.clickhouse is on but no store was given');
      outputs.push(
        await startClickHouseOutput({
          stream: o.stream,
          store: o.store,
          alertsTopic: topics.alerts,
          deadletterTopic: o.deadletterTopic,
          group: c.group,
          logger: o.logger,
          signal: abort.signal,
        }),
      );
    }
    for (const w of parts.webhooks ? c.webhooks : []) {
      outputs.push(
        await startWebhookOutput({
          stream: o.stream,
          alertsTopic: topics.alerts,
          group: c.group,
          config: w,
          telemetry,
          signal: abort.signal,
          ...(o.webhookRetryPolicy ? { retryPolicy: o.webhookRetryPolicy } : {}),
        }),
      );
    }
    if (parts.engine) {
      // Current before the first event is evaluated (view.ts): rules never read an empty view as "no roles".
      identity = new IdentityView(o.logger);
      await identity.start(o.stream, identityTopic(o.topicPrefix));
    }
    engine = !parts.engine
      ? undefined
      : await startEngineConsumer({
          stream: o.stream,
          logsTopic: o.logsTopic,
          alertsTopic: topics.alerts,
          stateTopic: topics.state,
          group: c.group,
          rules,
          allowedLatenessMs: c.allowed_lateness_ms,
          dedupWindowMs: c.dedup_window_ms,
          maxBatchRecords: c.max_batch_records,
          maxBatchWaitMs: c.max_batch_wait_ms,
          telemetry,
          ...(identity ? { identity } : {}),
        });
    // Beside the engine: it folds the alerts into users' levels, and lowers them as contributions expire (also
    // when no rule declares risk any more: the states already written still expire).
    if (parts.engine && c.risk.enabled) {
      riskFold = await startRiskFold({
        stream: o.stream,
        alertsTopic: topics.alerts,
        stateTopic: topics.state,
        riskTopic: risk.state,
        changesTopic: risk.changes,
        group: `${c.group}.risk`,
        maxBatchRecords: c.risk.max_batch_records,
        expiryCheckIntervalMs: c.risk.expiry_check_interval_ms,
        telemetry: riskTelemetry,
      });
    }
    const scheduled = rules.filter((r) => r.kind === 'scheduled');
    if (scheduled.length && c.scheduled && parts.engine) {
      if (!o.store)
        throw new HooklogError(
          'CONFIG_INVALID',
          `scheduled rules (${scheduled[0]!.id}, …) need the store, and none was given`,
        );
      scheduler = await startScheduler({
        stream: o.stream,
        store: o.store,
        rules: scheduled,
        alertsTopic: topics.alerts,
        stateTopic: topics.state,
        group: c.group,
        telemetry,
        ...(o.resolveQuery ? { resolveQuery: o.resolveQuery } : {}),
      });
    }
    telemetry.log.info(
      {
        rules: rules.length,
        scheduled: c.scheduled ? scheduled.length : 0,
        webhooks: c.webhooks.length,
        clickhouse: c.clickhouse,
        risk: riskFold ? rules.filter((r) => r.risk).length : null,
        parts,
      },
      'alerting started',
    );
    return {
      rules,
      counters: telemetry.counters,
      riskCounters: riskTelemetry.counters,
      topics,
      stop: () => stopAll(engine),
    };
  } catch (err) {
    await stopAll(engine);
    throw err;
  }
}
