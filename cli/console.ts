/**
 * The console's dependencies, composed here because they belong to other
 * components: the query library (the very functions `hooklog query` runs), the
 * status and coverage reports (`hooklog status`, `hooklog coverage`) and what
 * the configured rules say about themselves.
 */
import { search } from '../analytics/search/search.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Config } from './config/schema.js';
import type { Logger } from '../platform/log.js';
import type { Store } from '../platform/store/index.js';
import type { Stream } from '../platform/stream/types.js';
import {
  alertStatesTopic,
  consoleSessionsTopic,
  RevocationView,
  savedSearchesTopic,
  type ConsoleDeps,
  type RuleCaseRunner,
  type RuleInfo,
} from '../console/index.js';
import { describeQueries } from '../analytics/registry.js';
import { runNamedQuery } from '../analytics/run.js';
import { BUILTIN_RULE_FILES, loadAllRules } from '../consumers/alerting/index.js';
import { loadCases } from '../consumers/alerting/cases/load.js';
import { runCases } from '../consumers/alerting/cases/run.js';
import { collectStatus } from './status.js';
import { coverageReport } from './coverage.js';
import { configuredOrgs } from './config/orgs.js';
import { openIpLists } from './ip-lists.js';

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
            { placeholders: a.sigma_placeholders, defaultSuppressMs: a.suppression_ms, lists: openIpLists(config) },
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

/**
 * A rule file's cases run as `hooklog rules test --cases <file>` runs them with this config (its lateness,
 * suppression, placeholders and IP lists), from a file of its own in a temporary directory. No store: the
 * console's rules are stream rules.
 */
function ruleCases(config: Config): RuleCaseRunner {
  return async (yaml) => {
    const dir = mkdtempSync(join(tmpdir(), 'hooklog-make-rule-'));
    try {
      const file = join(dir, 'rule.yaml');
      writeFileSync(file, yaml);
      const a = config.alerting;
      const loaded = loadCases([file], {
        placeholders: a?.sigma_placeholders ?? {},
        defaultSuppressMs: a?.suppression_ms ?? 0,
        lists: openIpLists(config),
      });
      const report = await runCases(loaded, {
        allowedLatenessMs: a?.allowed_lateness_ms ?? 300_000,
        ...(a ? { dedupWindowMs: a.dedup_window_ms } : {}),
      });
      return report.results.map((r) => ({ name: r.name, failure: r.status === 'passed' ? null : r.message }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
    savedSearchesTopic: savedSearchesTopic(config.stream.topic_prefix),
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
    ruleCases: ruleCases(config),
    logger,
  };
}
