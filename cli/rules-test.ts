/**
 * `hooklog rules test`, both forms:
 *
 * - `--cases [paths…]`: every rule's labelled examples (consumers/alerting/cases/),
 *   offline: the engine in this process, no stream and no store; scheduled
 *   rules' SQL runs in a throwaway embedded ClickHouse holding each case's
 *   events, written by the sink's own row mapping (composed here: components
 *   do not import each other). Exit 1 when a case fails.
 * - `<target> --since …`: the backtest over the events in ClickHouse.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { HooklogError } from '../platform/errors.js';
import { createLogger, type Logger } from '../platform/log.js';
import { Header } from '../platform/stream/headers.js';
import { migrate, openStore } from '../platform/store/index.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import { prepareQuery } from '../analytics/run.js';
import { mapEventRecord } from '../consumers/clickhouse-sink/rows.js';
import { progress } from '../consumers/alerting/commands.js';
import { rulesTestCommand } from './alerting-commands.js';
import { BUILTIN_RULE_FILES, CONTENT_DIR } from '../consumers/alerting/index.js';
import { ENRICHMENT_HEADER, encodeEnrichment } from '../platform/enrichment/enrichment.js';
import { loadCases, type FeedEvent } from '../consumers/alerting/cases/load.js';
import { failed, renderJson, renderJunit, renderTable } from '../consumers/alerting/cases/report.js';
import { runCases, type CaseStore } from '../consumers/alerting/cases/run.js';
import { loadConfig } from './config/load.js';
import { READS_STORE } from './config/needs.js';
import type { Config } from './config/schema.js';
import { render, type OutputFormat } from './format.js';
import { openIpLists } from './ip-lists.js';

interface Options {
  cases?: boolean;
  since?: string;
  until?: string;
  org?: string;
  first: string;
  format: OutputFormat | 'junit';
  junit?: string;
  json?: string;
  requireCases?: boolean;
  rule?: string[];
  tag?: string[];
  case?: string[];
}

/** A repeatable option's values, in order (no default given: commander would print it in the help). */
const collect = (v: string, all: string[] | undefined) => [...(all ?? []), v];

/**
 * The rule files `--cases` tests when given none: the configured ones with the built-in rules
 * (they always run), or, with no alerting rules configured, the content hooklog ships.
 */
export function defaultCasePaths(config: Config): string[] {
  const a = config.alerting;
  const configured = a ? [...a.rule_paths, ...a.rule_files, ...a.sigma_paths] : [];
  if (configured.length === 0) return [CONTENT_DIR];
  return [...new Set([...BUILTIN_RULE_FILES, ...configured.map((p) => resolve(p))])];
}

/** A throwaway embedded ClickHouse for scheduled cases: migrated, each case's events written as the sink does. */
export async function openCaseStore(logger: Logger): Promise<CaseStore> {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-cases-'));
  const store = openStore({ database: 'hooklog_cases', dataDir: dir, logger });
  let loads = 0;
  try {
    await migrate(store, logger);
  } catch (err) {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    store,
    load: async (feed: readonly FeedEvent[]) => {
      await store.command(`TRUNCATE TABLE ${store.database}.${EVENTS_TABLE}`);
      const receivedAt = new Date().toISOString();
      const rows = feed.map((f, i) => {
        const mapped = mapEventRecord({
          topic: 'cases',
          partition: 0,
          offset: i,
          key: f.org,
          value: Buffer.from(JSON.stringify(f.event)),
          timestamp: Date.now(),
          headers: {
            [Header.org]: f.org,
            [Header.source]: 'hook',
            [Header.receivedAt]: receivedAt,
            // A mocked GeoIP answer reaches the enrichment columns as the record header would.
            ...(f.enrichment ? { [ENRICHMENT_HEADER]: encodeEnrichment(f.enrichment)! } : {}),
          },
        });
        if (!mapped.ok) throw new HooklogError('RECORD_INVALID', `event ${i + 1} of the case: ${mapped.reason}`);
        return mapped.row;
      });
      // Its own token per load: two cases with the same events are two inserts, not a deduplicated repeat.
      if (rows.length) await store.insertJson(EVENTS_TABLE, rows, { dedupToken: `cases-${++loads}` });
    },
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function runCaseCommand(config: Config, paths: string[], o: Options): Promise<void> {
  if (o.format === 'csv') throw new HooklogError('QUERY_INVALID', '--cases prints table, json or junit');
  const a = config.alerting;
  const loaded = loadCases(
    paths.length ? paths : defaultCasePaths(config),
    {
      placeholders: a?.sigma_placeholders ?? {},
      defaultSuppressMs: a?.suppression_ms ?? 0,
      lists: openIpLists(config),
    },
    { rules: o.rule, tags: o.tag, cases: o.case },
  );
  const logger = createLogger({ level: 'warn', destination: process.stderr });
  const report = await runCases(loaded, {
    allowedLatenessMs: a?.allowed_lateness_ms ?? 300_000,
    ...(a ? { dedupWindowMs: a.dedup_window_ms } : {}),
    openStore: () => openCaseStore(logger),
    resolveQuery: (name, params) => prepareQuery(name, 'hooklog_cases', params),
  });
  const ro = { requireCases: o.requireCases === true };
  if (o.junit) writeFileSync(o.junit, renderJunit(report, ro));
  if (o.json) writeFileSync(o.json, renderJson(report, ro));
  const out = o.format === 'json' ? renderJson : o.format === 'junit' ? renderJunit : renderTable;
  process.stdout.write(out(report, ro));
  if (failed(report, ro)) process.exitCode = 1;
}

async function runBacktest(config: Config, targets: string[], o: Options): Promise<void> {
  if (targets.length !== 1 || !o.since)
    throw new HooklogError(
      'QUERY_INVALID',
      'rules test: a backtest takes one <file|dir|rule-id> and --since (or test the rules against their cases with --cases [paths…])',
    );
  if (o.format === 'junit' || o.junit || o.json || o.requireCases || o.rule || o.tag || o.case)
    throw new HooklogError(
      'QUERY_INVALID',
      '--junit, --json, --require-cases, --rule, --tag, --case and -f junit go with --cases',
    );
  const bar = progress(process.stderr);
  // Through the running hooklog when it holds embedded ClickHouse (cli/alerting-commands.ts).
  const r = await rulesTestCommand(
    config,
    targets[0]!,
    {
      since: o.since,
      ...(o.until ? { until: o.until } : {}),
      ...(o.org ? { org: o.org } : {}),
      sample: Number(o.first) || 3,
    },
    bar.onProgress,
  );
  bar.done();
  if (o.format === 'json') {
    process.stdout.write(
      JSON.stringify({ rules: r.summary.rows, first: r.first.rows, summary: r.footer }, null, 2) + '\n',
    );
    return;
  }
  const f = o.format as OutputFormat;
  process.stdout.write(render(r.summary, f) + '\n' + render(r.first, f) + r.footer + '\n');
}

/** Adds `rules test` to the `rules` command. */
export function addRulesTestCommand(rules: Command, configPath: () => string | undefined): void {
  rules
    .command('test')
    .description(
      "Test rules. With --cases: run every rule's test cases (in the rule, or a <name>.cases.yaml sidecar) offline through the engine, one line per failing case, exit 1 on a failure. Otherwise a backtest: replay rules over the events in ClickHouse and print what they would have raised; sends nothing.",
    )
    .argument(
      '[targets...]',
      "with --cases: rule files or directories (default: the config's rule paths, else the shipped content); else one rule file, directory or configured rule id",
    )
    .option('--cases', "run the rules' test cases offline (no stream, no store)")
    .option('--require-cases', 'with --cases: also fail when a rule lacks a case that alerts or one that does not')
    .option(
      '--rule <id>',
      'with --cases: only rules whose id is this (exact, or a glob: * any characters, ? one); repeat for several',
      collect,
    )
    .option(
      '--tag <tag>',
      "with --cases: only rules with this tag (exact or glob, any case; a Sigma rule's own tags); repeat for several",
      collect,
    )
    .option(
      '--case <name>',
      'with --cases: only cases of this name (exact or glob, any case); repeat for several',
      collect,
    )
    .option('--junit <file>', 'with --cases: also write a JUnit XML report to <file>')
    .option('--json <file>', 'with --cases: also write the JSON report to <file>')
    .option('--since <time>', 'backtest start: ISO-8601, or a duration back from now (30d, 12h)')
    .option('--until <time>', 'backtest end, exclusive (default: now)')
    .option('--org <org>', 'backtest only this org')
    .option('--first <n>', 'backtest: alerts shown per rule', '3')
    .addOption(
      new Option('-f, --format <format>', 'output format (junit: with --cases)')
        .choices(['table', 'json', 'csv', 'junit'])
        .default('table'),
    )
    .action(async (targets: string[], o: Options) => {
      const { config } = loadConfig(configPath(), process.env, {}, READS_STORE);
      if (o.cases) {
        if (o.since || o.until || o.org)
          throw new HooklogError('QUERY_INVALID', '--since, --until and --org are for the backtest, not --cases');
        await runCaseCommand(config, targets, o);
      } else await runBacktest(config, targets, o);
    });
}
