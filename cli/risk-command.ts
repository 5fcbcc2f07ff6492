/**
 * `hooklog risk --org <org> [--user <id or login>]`: who is at what level,
 * and why. The level is read from `<prefix>.risk` (schemas/risk.ts), decided
 * at this instant as the token hook decides it (a contribution past its
 * expiry no longer counts); "why" is the contribution holding the level
 * (rule, reason, alert, until when). With `--user`, that user's history of
 * changes from the `risk_changes` table follows.
 *
 * Like `hooklog status`, it needs the stream and the store: while `hooklog
 * start` holds the embedded log or embedded ClickHouse, the running process
 * answers through its admin socket (route `/risk`).
 */
import { Option, type Command } from 'commander';
import { loadConfig } from './config/load.js';
import { READS_STORE } from './config/needs.js';
import type { Config } from './config/schema.js';
import { postToAdminSocket } from './admin-socket.js';
import { render, type OutputFormat, type ResultSet } from './format.js';
import { HooklogError } from '../platform/errors.js';
import { createLogger } from '../platform/log.js';
import { openStore, storeOptions, type Store } from '../platform/store/index.js';
import { openStream } from '../platform/stream/open.js';
import type { Stream } from '../platform/stream/types.js';
import { levelAt, riskRank, riskStateSchema, riskTopics } from '../schemas/risk.js';

export interface RiskQuery {
  readonly org: string;
  readonly user?: string;
}

export interface RiskReport {
  /** One row per user of the org above `none` now (or the one asked for): level, and the contribution holding it. */
  readonly users: ResultSet;
  /** With a user: every change of that user's level, oldest first. */
  readonly changes?: ResultSet;
}

const USER_COLUMNS = ['user_id', 'login', 'level', 'until', 'rule', 'reason', 'alert_id', 'updated_at'] as const;
const CHANGE_COLUMNS = ['at', 'previous', 'current', 'cause', 'rule', 'reason', 'alert_id', 'change_id'] as const;

/** The report, with a stream and a store this process holds (the running one, or its own). */
export async function collectRisk(
  config: Config,
  stream: Stream,
  store: Store,
  q: RiskQuery,
  now = Date.now(),
): Promise<RiskReport> {
  const wanted = q.user?.toLowerCase();
  const rows: Array<Record<string, unknown>> = [];
  for (const rec of (await stream.readLatestByKey(riskTopics(config.stream.topic_prefix).state)).values()) {
    if (rec.value.length === 0 || !rec.key?.startsWith(`${q.org}/`)) continue;
    let parsed;
    try {
      parsed = riskStateSchema.safeParse(JSON.parse(rec.value.toString('utf8')));
    } catch {
      continue;
    }
    if (!parsed.success || parsed.data.org !== q.org) continue;
    const s = parsed.data;
    if (wanted !== undefined && s.entity.id.toLowerCase() !== wanted && s.entity.login?.toLowerCase() !== wanted)
      continue;
    const level = levelAt(s.contributions, now);
    if (level === 'none' && wanted === undefined) continue;
    const holder = s.contributions
      .filter((c) => c.level === level && Date.parse(c.expires_at) > now)
      .sort((a, b) => Date.parse(b.expires_at) - Date.parse(a.expires_at))[0];
    rows.push({
      user_id: s.entity.id,
      login: s.entity.login ?? '',
      level,
      until: holder?.expires_at ?? '',
      rule: holder?.rule_id ?? '',
      reason: holder?.reason ?? '',
      alert_id: holder?.alert_id ?? '',
      updated_at: s.updated_at,
    });
  }
  rows.sort(
    (a, b) =>
      riskRank(b['level'] as never) - riskRank(a['level'] as never) ||
      String(a['user_id']).localeCompare(String(b['user_id'])),
  );
  const users: ResultSet = { columns: USER_COLUMNS, rows };
  if (q.user === undefined) return { users };
  const changes = await store.query<Record<string, unknown>>(
    `SELECT replaceOne(toString(at), ' ', 'T') || 'Z' AS at, previous, current, cause, rule_id AS rule, reason, alert_id, change_id
     FROM ${store.database}.risk_changes FINAL
     WHERE org = {org:String} AND (entity_id = {user:String} OR lower(entity_login) = lower({user:String}))
     ORDER BY at, change_id LIMIT 1000`,
    { org: q.org, user: q.user },
  );
  return { users, changes: { columns: CHANGE_COLUMNS, rows: changes } };
}

/** The admin socket's `/risk` route in a running process (cli/start.ts). */
export function riskRoute(config: Config, stream: Stream, store: Store): (payload: unknown) => Promise<RiskReport> {
  return async (payload) => {
    const p = payload as { org?: unknown; user?: unknown } | null;
    if (typeof p?.org !== 'string' || (p.user !== undefined && typeof p.user !== 'string'))
      throw new HooklogError('QUERY_INVALID', 'expected {"org": string, "user"?: string}');
    return collectRisk(config, stream, store, { org: p.org, ...(typeof p.user === 'string' ? { user: p.user } : {}) });
  };
}

/** The running process's report; `undefined` when none is listening. */
async function viaAdminSocket(dataDir: string, q: RiskQuery): Promise<RiskReport | undefined> {
  return postToAdminSocket(dataDir, '/risk', q, (error) => new HooklogError('INTERNAL', error)) as Promise<
    RiskReport | undefined
  >;
}

async function runRisk(config: Config, q: RiskQuery): Promise<RiskReport> {
  if (!config.stream.kafka || !config.store.clickhouse) {
    const running = await viaAdminSocket(config.data_dir, q);
    if (running) return running;
  }
  const logger = createLogger({ level: 'warn' });
  const stream = await openStream(config, logger);
  const store = openStore(storeOptions(config, logger));
  try {
    return await collectRisk(config, stream, store, q);
  } finally {
    await stream.close().catch((err: unknown) => logger.warn({ err }, 'closing the stream failed'));
    await store.close();
  }
}

/** `hooklog risk`: wired by cli/main.ts. */
export function registerRiskCommand(program: Command): void {
  program
    .command('risk')
    .description(
      "Users' risk levels from findings: who is at what level now and why (the rule, its reason, until when); with --user, that user's changes.",
    )
    .requiredOption('--org <org>', 'the org')
    .option('--user <user>', "one user, by id (00u…) or login, with the history of the user's level")
    .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
    .action(async (opts: { org: string; user?: string; format: OutputFormat }) => {
      const { config } = loadConfig(program.opts<{ config?: string }>().config, process.env, {}, READS_STORE);
      const q: RiskQuery = { org: opts.org, ...(opts.user !== undefined ? { user: opts.user } : {}) };
      const report = await runRisk(config, q);
      if (opts.format === 'json') {
        process.stdout.write(
          JSON.stringify({ users: report.users.rows, changes: report.changes?.rows }, null, 2) + '\n',
        );
        return;
      }
      process.stdout.write(render(report.users, opts.format));
      if (report.changes)
        process.stdout.write((opts.format === 'table' ? '\n' : '') + render(report.changes, opts.format));
    });
}
