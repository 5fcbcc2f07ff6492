/**
 * The console's dependencies, composed here because they belong to other
 * components: the query library (the very functions `hooklog query` runs), the
 * status and coverage reports (`hooklog status`, `hooklog coverage`) and what
 * the configured rules say about themselves.
 */
import { search } from '../analytics/search/search.js';
import { resolve } from 'node:path';
import type { Config } from './config/schema.js';
import type { Logger } from '../platform/log.js';
import type { Store } from '../platform/store/index.js';
import type { Stream } from '../platform/stream/types.js';
import {
  alertStatesTopic,
  consoleSessionsTopic,
  RevocationView,
  type ConsoleDeps,
  type RuleInfo,
} from '../console/index.js';
import { describeQueries } from '../analytics/registry.js';
import { runNamedQuery } from '../analytics/run.js';
import { BUILTIN_RULE_FILES, loadAllRules } from '../consumers/alerting/index.js';
import { collectStatus } from './status.js';
import { coverageReport } from './coverage.js';
import { configuredOrgs } from './config/orgs.js';

/** The configured rules by id (loaded once, lazily; none when alerting is off or the rules do not load). */
function ruleInfo(config: Config, logger: Logger): RuleInfo {
  let byId: Map<string, Record<string, unknown>> | undefined;
  return (id) => {
    if (!byId) {
      byId = new Map();
      const a = config.alerting;
      if (a) {
        try {
          const rules = loadAllRules(
            {
              rules: a.rules,
              // As alerting loads them: the built-in file once, even when the config names it too.
              ruleFiles: [
                ...BUILTIN_RULE_FILES.filter((f) => !a.rule_files.some((r) => resolve(r) === f)),
                ...a.rule_files,
              ],
              sigmaPaths: a.sigma_paths,
              rulePaths: a.rule_paths,
            },
            { placeholders: a.sigma_placeholders, defaultSuppressMs: a.suppression_ms },
          );
          for (const r of rules)
            byId.set(r.id, {
              id: r.id,
              title: r.title,
              severity: r.severity,
              kind: r.kind,
              source: r.source,
              filter: r.filter ?? null,
              group_by: r.groupBy.map((g) => g.join('.')),
              window_ms: r.windowMs,
              threshold: r.threshold,
            });
        } catch (err) {
          logger.warn({ err }, 'console: the configured rules did not load; alerts show without their rule');
        }
      }
    }
    return byId.get(id);
  };
}

export function consoleDeps(config: Config, stream: Stream, store: Store, logger: Logger): ConsoleDeps {
  return {
    config: config.console,
    keys: config.api.keys,
    store,
    stream,
    topic: alertStatesTopic(config.stream.topic_prefix),
    sessionsTopic: consoleSessionsTopic(config.stream.topic_prefix),
    // Started by the composition root (cli/runtime.ts) before HTTP is served.
    revocations: new RevocationView(logger.child({ component: 'console' })),
    knownOrgs: configuredOrgs(config),
    queries: {
      list: describeQueries,
      run: (name, params) => runNamedQuery(store, name, params),
    },
    search: (principal, q) => search(store, principal, q),
    operations: {
      status: async () => (await collectStatus(config, stream, store)).map((line) => ({ ...line })),
      coverage: (org, since, until) =>
        coverageReport(config, { org, since, until }, (name, params) => runNamedQuery(store, name, params)),
    },
    rules: ruleInfo(config, logger),
    logger,
  };
}
