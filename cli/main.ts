/**
 * The hooklog command tree: every command, its options and its help. `cli/hooklog.ts` runs it on the process's
 * arguments; the documentation's CLI reference (docs/reference/cli.md) and its command check read it too.
 */
import { Command, Option } from 'commander';
import { loadConfig } from './config/load.js';
import { READS_STORE, type ConfigNeeds } from './config/needs.js';
import { redactConfig } from '../platform/config/secrets.js';
import { configJsonSchema } from './config/schema.js';
import { createLogger } from '../platform/log.js';
import { stringify } from 'yaml';
import { HooklogError } from '../platform/errors.js';
import { refuseBesideRunningHooklog } from '../platform/data-dir.js';
import { render, type OutputFormat } from './format.js';
import { runSql } from './sql.js';
import { runStart } from './start.js';
import { preflight } from './preflight.js';
import { collectParams, listQueries, runQueryCommand } from './query.js';
import { runStatus, statusHeading, statusLateFooter, statusResultSet, type StatusLine } from './status.js';
import { statusViaAdminSocket } from './admin-socket.js';
import { openStream } from '../platform/stream/open.js';
import { openStore, storeOptions } from '../platform/store/index.js';
import { describeQueries } from '../analytics/registry.js';
import { runAlert } from './alert.js';
import { coverageReport, renderCoverage } from './coverage.js';
import { backfillCommand } from '../ingest/backfill/run.js';
import { prepareQuery } from '../analytics/run.js';
import { describeRuleFiles, lintRuleFiles } from '../consumers/alerting/commands.js';
import { huntCommand } from './alerting-commands.js';
import {
  findSavedSearch,
  listSavedSearches,
  pointAt,
  renderSavedList,
  renderSearch,
  runSearch,
  savedSearchRequest,
  searchRequest,
  type SearchFlags,
} from './search.js';
import { addRulesTestCommand } from './rules-test.js';
import { registerHooksCommands } from './hooks-command.js';
import { registerActionsCommand } from './actions-command.js';
import { registerRiskCommand } from './risk-command.js';
import { registerConsoleCommand } from './console-command.js';
import { describeBackup, runBackup, runRestore } from './backup.js';
import { versionText } from '../platform/release/current.js';
import { IpLists } from '../platform/iplists/lists.js';

export const program = new Command('hooklog')
  .description(
    'Receives identity-provider event hooks and streams every event through Kafka (or an embedded log) into ClickHouse, exactly once per event.',
  )
  .showHelpAfterError()
  .version(
    versionText(),
    '-V, --version',
    'print the version, the ClickHouse schema version (highest migration) and the record format versions it reads and writes per topic',
  )
  .addOption(
    new Option(
      '-c, --config <path>',
      'config file (default: $HOOKLOG_CONFIG, else ./hooklog.yaml, else built-in defaults)',
    ),
  );

/**
 * The config, as a command that uses `needs` loads it: only the secrets of those sections must resolve
 * (cli/config/needs.ts), so a command reading the store runs without the hooks' secrets.
 */
function configFor(needs: ConfigNeeds) {
  return loadConfig(program.opts<{ config?: string }>().config, process.env, {}, needs);
}

program
  .command('start')
  .description('Run the configured components (roles) in one process: receivers, pollers, ClickHouse sink, alerting.')
  .option(
    '--roles <list>',
    "comma-separated roles to run here, overriding the config's `roles` (receivers,pollers,sink,alerting)",
  )
  .option('--port <port>', "this process's HTTP port, over server.port (else $HOOKLOG_PORT)")
  .option('--instance-id <id>', "this process's instance_id (else $HOOKLOG_INSTANCE_ID)")
  .action(async (opts: { roles?: string; port?: string; instanceId?: string }) =>
    runStart(program.opts<{ config?: string }>().config, opts.roles, { port: opts.port, instanceId: opts.instanceId }),
  );

program
  .command('alert')
  .description(
    'Run only the alerting consumer (config section `alerting:`): rules on <prefix>.logs → alerts topic, ClickHouse, webhooks.',
  )
  .action(async () => runAlert(program.opts<{ config?: string }>().config, prepareQuery));

const rules = program
  .command('rules')
  .description(
    'Detection rules: what rule files load as (hooklog rules, Sigma or the vendor catalogue, told apart by content).',
  );

rules
  .command('list', { isDefault: true })
  .description('Load rule files or directories and print, per file, its format, its rules and how each runs.')
  .argument(
    '[paths...]',
    "rule files or directories (default: the config's alerting rule_paths, rule_files and sigma_paths)",
  )
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .action((paths: string[], opts: { format: OutputFormat }) => {
    let use = paths;
    if (use.length === 0) {
      const a = configFor([]).config.alerting;
      use = a ? [...a.rule_paths, ...a.rule_files, ...a.sigma_paths] : [];
    }
    process.stdout.write(render(describeRuleFiles(use), opts.format));
  });

rules
  .command('lint')
  .description(
    'Check rule files (any format), every field path they read against the LogEvent schema, and print every problem with its file and line; exit 1 on errors.',
  )
  .argument('[paths...]', "rule files or directories (default: the config's alerting rule paths)")
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .option(
    '--strict',
    'every field path that is not a LogEvent field is an error (without it, one the service may yet add is a warning)',
  )
  .action((paths: string[], opts: { format: OutputFormat; strict?: boolean }) => {
    let use = paths;
    let loaded: ReturnType<typeof loadConfig> | undefined;
    try {
      loaded = configFor([]);
    } catch (err) {
      // Linting given files needs no config; the config's own paths do.
      if (paths.length === 0) throw err;
    }
    const a = loaded?.config.alerting;
    if (use.length === 0) use = a ? [...a.rule_paths, ...a.rule_files, ...a.sigma_paths] : [];
    // The config's risk for rules loaded as published; an unknown id is an error only for the config's own paths.
    const risk = a &&
      loaded && { file: loaded.origin, byId: a.risk.rules, inline: a.rules, strict: paths.length === 0 };
    const { result, errors } = lintRuleFiles(use, risk, {
      strict: opts.strict === true,
      ...(loaded ? { lists: new IpLists(loaded.config.enrichment) } : {}),
    });
    process.stdout.write(render(result, opts.format));
    if (errors) process.exitCode = 1;
  });

addRulesTestCommand(rules, () => program.opts<{ config?: string }>().config);

program
  .command('hunt')
  .description(
    'Run a hunt (a catalogue file with a System Log filter) over the events in ClickHouse, as parameterised SQL.',
  )
  .argument('<file>', 'the hunt or detection file')
  .requiredOption('--org <org>', 'the org')
  .requiredOption('--since <time>', 'start: ISO-8601, or a duration back from now (30d, 12h)')
  .option('--until <time>', 'end, exclusive (default: now)')
  .option('--limit <n>', 'most events printed', '1000')
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .action(
    async (file: string, opts: { org: string; since: string; until?: string; limit: string; format: OutputFormat }) => {
      const { config } = configFor(READS_STORE);
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1_000_000)
        throw new HooklogError('QUERY_INVALID', '--limit must be a whole number from 1 to 1000000');
      process.stdout.write(
        render(
          await huntCommand(config, file, {
            org: opts.org,
            since: opts.since,
            ...(opts.until ? { until: opts.until } : {}),
            limit,
          }),
          opts.format,
        ),
      );
    },
  );

program
  .command('search')
  .description(
    'Search the events in ClickHouse with a filter in the rules\' language (eventType eq "user.session.start" and client.ipAddress sw "203."), newest first; a blank filter is every event.',
  )
  .argument('[filter]', "the filter (SCIM syntax, as `match` rules write it); '' for every event")
  .requiredOption('--org <org>', "the org, or '*' for every org")
  .option('--since <time>', 'start: ISO-8601, or a duration back from now (30d, 12h); required unless --saved')
  .option('--until <time>', 'end, exclusive (default: now)')
  .option(
    '--fields <list>',
    'comma-separated fields to show (default eventType,actor.alternateId,client.ipAddress,outcome.result,displayMessage)',
  )
  .option('--facets <list>', 'comma-separated fields whose top values to count over every matching event')
  .option('--histogram', 'count matching events per time bucket')
  .option('--limit <n>', 'events per page (1 to 1000)', '100')
  .option('--after <cursor>', 'the next page: the cursor the previous page printed')
  .option(
    '--saved <name>',
    "run the org's saved search of this name (saved in the console): its filter, range, fields and facets; --since, --until, --fields, --facets override",
  )
  .option('--list-saved', "list the org's saved searches ('*': every org's) instead of searching")
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .action(
    async (
      filterArg: string | undefined,
      opts: SearchFlags & { format: OutputFormat; saved?: string; listSaved?: boolean },
    ) => {
      const { config } = configFor(READS_STORE);
      if (opts.listSaved) {
        process.stdout.write(renderSavedList(await listSavedSearches(config, opts.org), opts.format));
        return;
      }
      if (opts.saved !== undefined && filterArg !== undefined)
        throw new HooklogError('QUERY_INVALID', 'give a filter or --saved <name>, not both');
      if (opts.saved === undefined && filterArg === undefined)
        throw new HooklogError('QUERY_INVALID', "give a filter ('' for every event) or --saved <name>");
      const saved = opts.saved === undefined ? undefined : await findSavedSearch(config, opts.org, opts.saved);
      const filter = saved ? saved.filter : (filterArg ?? '');
      let page;
      try {
        page = await runSearch(config, saved ? savedSearchRequest(saved, opts) : searchRequest(filter, opts));
      } catch (err) {
        const caret = pointAt(filter, err);
        if (caret) process.stderr.write(caret);
        throw err;
      }
      process.stdout.write(renderSearch(page, opts.format));
      // The cursor goes to stderr, so stdout stays the result a script reads (JSON carries it as `next`).
      if (page.next && opts.format !== 'json') process.stderr.write(`more: --after ${page.next}\n`);
    },
  );

program
  .command('sql')
  .description(
    'Run a read-only SQL query against the configured store and print the result. Tables: events (one row per event), legacy_events, token_decisions, alerts, risk_changes, deadletter, schema_migrations.',
  )
  .argument('<query>', 'the SQL query (read-only: writes are refused by ClickHouse)')
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .action(async (query: string, opts: { format: OutputFormat }) => {
    const { config } = configFor(READS_STORE);
    const result = await runSql(config, query);
    process.stdout.write(render(result, opts.format));
  });

program
  .command('query')
  .description(
    'Run a named analytics query (see --list), e.g. hooklog query password_spraying --org acme --since 2026-01-01T00:00:00Z --until 2026-01-08T00:00:00Z',
  )
  .argument('[name]', "the query's name")
  .option('--list', 'list the queries and their parameters')
  .option('--org <org>', 'the org')
  .option('--since <time>', 'start of the time range, inclusive (ISO-8601)')
  .option('--until <time>', 'end of the time range, exclusive (ISO-8601)')
  .option('--limit <n>', 'most rows returned')
  .option(
    '-p, --param <name=value>',
    'a query-specific parameter (repeatable)',
    (v: string, all: string[]) => [...all, v],
    [] as string[],
  )
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .action(
    async (
      name: string | undefined,
      opts: {
        list?: boolean;
        org?: string;
        since?: string;
        until?: string;
        limit?: string;
        param: string[];
        format: OutputFormat;
      },
    ) => {
      if (opts.list || !name) {
        process.stdout.write(
          opts.format === 'json'
            ? JSON.stringify(describeQueries(), null, 2) + '\n'
            : render(listQueries(), opts.format),
        );
        return;
      }
      const { config } = configFor(READS_STORE);
      const params = collectParams(
        { org: opts.org, since: opts.since, until: opts.until, limit: opts.limit },
        opts.param,
      );
      process.stdout.write(render(await runQueryCommand(config, name, params), opts.format));
    },
  );

program
  .command('status')
  .description(
    "One line per org and source: last event by hooks and by pollers, the poller's last success beside its position's age (a quiet org succeeds while its position stays put; a stuck poller does neither), poller and sink lag, dead letters and refused hook deliveries in the last hour, the org's events that came too late for a rule needing event order (per rule below the table: the last one and the watermark it missed); and when it was checked.",
  )
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .action(async (opts: { format: OutputFormat }) => {
    const { config } = configFor(READS_STORE);
    const logger = createLogger({ level: 'warn' });
    const lines = await runStatus(
      config,
      logger,
      () => statusViaAdminSocket<StatusLine[]>(config.data_dir),
      async () => {
        const stream = await openStream(config, logger);
        return { stream, store: openStore(storeOptions(config, logger)) };
      },
    );
    process.stdout.write(
      opts.format === 'json'
        ? JSON.stringify(lines, null, 2) + '\n'
        : opts.format === 'csv'
          ? render(statusResultSet(lines, 'csv'), 'csv')
          : statusHeading(lines) + render(statusResultSet(lines), 'table') + statusLateFooter(lines),
    );
  });

program
  .command('backfill')
  .description(
    "Re-read a window (within the last 90 days) of an org's System Log or legacy Events into the stream, sharing the org's rate budget with the running poller. Interrupted (even by kill -9), the same command resumes where it stopped.",
  )
  .requiredOption('--org <org>', 'the org (as configured in orgs)')
  .addOption(new Option('--source <source>', 'which API').choices(['logs', 'events']).default('logs'))
  .requiredOption('--since <time>', 'start of the window, inclusive (ISO-8601)')
  .requiredOption('--until <time>', 'end of the window, exclusive (ISO-8601)')
  .action(async (opts: { org: string; source: 'logs' | 'events'; since: string; until: string }) => {
    const { config } = configFor(['orgs', 'stream']);
    // The embedded log admits one process: beside a running hooklog, say so at once instead of waiting for it.
    if (!config.stream.kafka) await refuseBesideRunningHooklog(config.data_dir, 'the embedded log');
    const logger = createLogger({
      level: config.log_level === 'debug' ? 'debug' : 'warn',
      destination: process.stderr,
    }).child({ component: 'backfill' });
    const p = await backfillCommand(config, opts, logger, process.stdout);
    process.stdout.write(
      `backfill complete: ${p.events} events from ${opts.since} to ${opts.until} (${p.requests} requests in this run)\n`,
    );
  });

program
  .command('coverage')
  .description(
    "How complete the event hooks are for an org: per hour and event type, events via hooks only, the System Log only, both; hook latency p50/p99; lost deliveries. Only the event types the org's hooks carry count (their register: types, and what they delivered); the others are named as left out. An org the config does not name is refused.",
  )
  .requiredOption('--org <org>', 'the org (as configured)')
  .requiredOption('--since <time>', 'start of the range, inclusive (ISO-8601)')
  .option('--until <time>', 'end of the range, exclusive (ISO-8601; default now)')
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json']).default('table'))
  .action(async (opts: { org: string; since: string; until?: string; format: 'table' | 'json' }) => {
    const { config } = configFor(READS_STORE);
    process.stdout.write(renderCoverage(await coverageReport(config, opts), opts.format));
  });

program
  .command('backup')
  .description(
    'Back up the embedded default (ClickHouse tables, the embedded log with its committed offsets and cursors) into an empty directory, consistently, while hooklog runs (through its admin socket) or not. A ClickHouse server and Kafka are backed up with their own tools (docs/operate/backups.md).',
  )
  .argument('<dir>', 'where the backup goes: a new or empty directory outside data_dir')
  .action(async (dir: string) => {
    const { config } = configFor(READS_STORE);
    const logger = createLogger({ level: 'warn', destination: process.stderr });
    process.stdout.write(describeBackup(await runBackup(config, dir, logger), dir, 'written to'));
  });

program
  .command('restore')
  .description(
    "Restore a backup into the config's data_dir, which must be empty or absent: the manifest's format and schema are checked, then every file's sha256, before anything is written. Then start hooklog as usual.",
  )
  .argument('<dir>', 'a directory hooklog backup wrote')
  .action(async (dir: string) => {
    const { config } = configFor(READS_STORE);
    const logger = createLogger({ level: 'warn', destination: process.stderr });
    process.stdout.write(describeBackup(await runRestore(config, dir, logger), dir, 'restored from'));
  });

registerHooksCommands(program);
registerActionsCommand(program);
registerConsoleCommand(program);

program
  .command('check-config')
  .description(
    'Validate the config, and the files and keys start would load (TLS, lookup tables, OAuth keys, rules, migrations); print it, defaults filled in and secrets redacted.',
  )
  .option('--schema', "print the config schema (JSON Schema, with every option's description and default) instead")
  .action(async (opts: { schema?: boolean }) => {
    if (opts.schema) {
      process.stdout.write(JSON.stringify(configJsonSchema(), null, 2) + '\n');
      return;
    }
    const { config, origin } = configFor('all');
    // What start would refuse beyond the schema: the files it reads and the keys it loads.
    await preflight(config);
    process.stdout.write(`# config OK (${origin})\n${stringify(redactConfig(config, configJsonSchema()))}`);
  });

registerRiskCommand(program);
