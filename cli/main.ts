import { Command, Option } from 'commander';
import { loadConfig } from '../platform/config/load.js';
import { redactSecrets } from '../platform/config/secrets.js';
import { configSchema } from '../platform/config/schema.js';
import { createLogger } from '../platform/log.js';
import { stringify } from 'yaml';
import { z } from 'zod';
import { HooklogError } from '../platform/errors.js';
import { render, type OutputFormat } from './format.js';
import { runSql } from './sql.js';
import { runStart } from './start.js';
import { collectParams, listQueries, runQueryCommand } from '../analytics/cli.js';
import { describeQueries } from '../analytics/registry.js';
import { runAlert } from '../consumers/alerting/run.js';

const program = new Command('hooklog')
  .description('Receives identity-provider event hooks and streams every event through Kafka (or an embedded log) into ClickHouse, exactly once per event.')
  .showHelpAfterError()
  .addOption(new Option('-c, --config <path>', 'config file (default: $HOOKLOG_CONFIG, else ./hooklog.yaml, else built-in defaults)'));

program
  .command('start')
  .description('Run the configured components (roles) in one process: receivers, pollers, ClickHouse sink, alerting.')
  .option('--roles <list>', 'comma-separated roles to run here, overriding the config\'s `roles` (receivers,pollers,sink,alerting)')
  .action(async (opts: { roles?: string }) => runStart(program.opts<{ config?: string }>().config, opts.roles));

program
  .command('alert')
  .description('Run only the alerting consumer (config section `alerting:`): rules on <prefix>.logs → alerts topic, ClickHouse, webhooks.')
  .action(async () => runAlert(program.opts<{ config?: string }>().config));

program
  .command('sql')
  .description('Run a read-only SQL query against the configured store and print the result. Tables: events (one row per event), legacy_events, token_decisions, alerts, deadletter, schema_migrations.')
  .argument('<query>', 'the SQL query (read-only: writes are refused by ClickHouse)')
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .action(async (query: string, opts: { format: OutputFormat }) => {
    const { config } = loadConfig(program.opts<{ config?: string }>().config);
    const result = await runSql(config, query);
    process.stdout.write(render(result, opts.format));
  });

program
  .command('query')
  .description('Run a named analytics query (see --list), e.g. hooklog query password_spraying --org acme --since 2026-01-01T00:00:00Z --until 2026-01-08T00:00:00Z')
  .argument('[name]', 'the query\'s name')
  .option('--list', 'list the queries and their parameters')
  .option('--org <org>', 'the org')
  .option('--since <time>', 'start of the time range, inclusive (ISO-8601)')
  .option('--until <time>', 'end of the time range, exclusive (ISO-8601)')
  .option('--limit <n>', 'most rows returned')
  .option('-p, --param <name=value>', 'a query-specific parameter (repeatable)', (v: string, all: string[]) => [...all, v], [] as string[])
  .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
  .action(async (name: string | undefined, opts: { list?: boolean; org?: string; since?: string; until?: string; limit?: string; param: string[]; format: OutputFormat }) => {
    if (opts.list || !name) {
      process.stdout.write(opts.format === 'json' ? JSON.stringify(describeQueries(), null, 2) + '\n' : render(listQueries(), opts.format));
      return;
    }
    const { config } = loadConfig(program.opts<{ config?: string }>().config);
    const params = collectParams({ org: opts.org, since: opts.since, until: opts.until, limit: opts.limit }, opts.param);
    process.stdout.write(render(await runQueryCommand(config, name, params), opts.format));
  });

program
  .command('check-config')
  .description('Validate the config and print it, defaults filled in and secrets redacted.')
  .option('--schema', 'print the config schema (JSON Schema, with every option\'s description and default) instead')
  .action((opts: { schema?: boolean }) => {
    if (opts.schema) {
      process.stdout.write(JSON.stringify(z.toJSONSchema(configSchema, { io: 'input' }), null, 2) + '\n');
      return;
    }
    const { config, origin } = loadConfig(program.opts<{ config?: string }>().config);
    process.stdout.write(`# config OK (${origin})\n${stringify(redactSecrets(config))}`);
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof HooklogError) {
    process.stderr.write(`hooklog: ${err.code}: ${err.message}\n`);
  } else {
    createLogger().fatal({ err: { message: (err as Error).message, stack: (err as Error).stack } }, 'hooklog failed');
  }
  process.exitCode = 1;
});
