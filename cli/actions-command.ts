/**
 * `hooklog actions list` and `hooklog actions approve <id>`: the operator's
 * side of response actions (consumers/response/). The list reads the
 * `actions` table (one row per step; an action's state is its latest step),
 * through a running hooklog's admin socket when it holds embedded ClickHouse.
 * An approval is a record on `<prefix>.actions`, keyed by the action's org so
 * it reaches the executor that owns that org's partition: appended through the
 * running process's admin socket when it holds the embedded log, else through
 * a stream of this process.
 */
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { Option } from 'commander';
import { loadConfig } from './config/load.js';
import { READS_STORE } from './config/needs.js';
import type { Config } from './config/schema.js';
import { render, type OutputFormat, type ResultSet } from './format.js';
import { runSql } from './sql.js';
import { postToAdminSocket } from './admin-socket.js';
import { HooklogError } from '../platform/errors.js';
import { orgSlug } from '../platform/identity/config.js';
import { createLogger } from '../platform/log.js';
import { openStream } from '../platform/stream/open.js';
import type { Stream } from '../platform/stream/types.js';
import { ACTION_STATES, actionStreamRecord, responseTopics, type ActionRecord } from '../consumers/response/records.js';

/** States an approval moves on: waiting for one, or a call whose outcome was unknown. */
const APPROVABLE = ['awaiting_approval', 'uncertain'];
const STEP_ORDER = ACTION_STATES.map((s) => `'${s}'`).join(',');

/** Each action once, in its latest state: the steps' values folded (an approval's row names only the action). */
export function actionsQuery(filter: { org?: string; state?: string; id?: string; limit: number }): string {
  const where = [
    ...(filter.org ? [`org = '${orgSlug.parse(filter.org)}'`] : []),
    ...(filter.id ? [`action_id = '${checkId(filter.id)}'`] : []),
  ];
  const having = filter.state ? `HAVING state = '${checkState(filter.state)}'` : '';
  return `SELECT action_id, any(org) AS org, argMax(state, (at, indexOf([${STEP_ORDER}], state))) AS state,
  anyIf(action, action != '') AS action, anyIf(group_id, group_id != '') AS group_id,
  anyIf(user_id, user_id != '') AS user_id, anyIf(user_login, user_login != '') AS user_login,
  anyIf(rule_id, rule_id != '') AS rule_id, anyIf(alert_id, alert_id != '') AS alert_id,
  max(attempt) AS attempts, argMaxIf(actor, at, actor != '') AS approved_by,
  argMaxIf(error, at, error != '') AS error, argMaxIf(note, at, note != '') AS note,
  min(at) AS decided_at, max(at) AS updated_at
FROM (SELECT * FROM actions FINAL ${where.length ? `WHERE ${where.join(' AND ')}` : ''})
GROUP BY action_id ${having}
ORDER BY decided_at DESC, action_id
LIMIT ${filter.limit}`;
}

function checkId(id: string): string {
  if (!/^[0-9a-f]{32}$/.test(id)) throw new HooklogError('QUERY_INVALID', `"${id}" is not an action id (32 hex)`);
  return id;
}

function checkState(state: string): string {
  if (!(ACTION_STATES as readonly string[]).includes(state))
    throw new HooklogError('QUERY_INVALID', `--state must be one of ${ACTION_STATES.join(', ')}`);
  return state;
}

/** The approval, checked against the table: the action exists and waits for one. */
export async function approveAction(
  config: Config,
  id: string,
  by: string,
  append: (record: ActionRecord) => Promise<void>,
): Promise<ActionRecord> {
  const found = await runSql(config, actionsQuery({ id, limit: 1 }));
  const row = found.rows[0] as { org?: string; state?: string } | undefined;
  if (!row)
    throw new HooklogError(
      'QUERY_INVALID',
      `no action ${id} in the actions table (it is written by the sink; a decision can take a second to show)`,
    );
  if (!APPROVABLE.includes(String(row.state)))
    throw new HooklogError(
      'QUERY_INVALID',
      `action ${id} is ${String(row.state)}: only ${APPROVABLE.join(' or ')} can be approved`,
    );
  const record: ActionRecord = {
    action_id: id,
    org: String(row.org),
    state: 'approved',
    at: new Date().toISOString(),
    by,
  };
  await append(record);
  return record;
}

/** Appends to the actions topic: through a running hooklog holding the embedded log, else on a stream of our own. */
async function appendApproval(config: Config, record: ActionRecord): Promise<void> {
  const topic = responseTopics(config.stream.topic_prefix).actions;
  if (!config.stream.kafka) {
    const viaRunning = await postToAdminSocket(
      config.data_dir,
      '/actions/approve',
      record,
      (e) => new HooklogError('INTERNAL', e),
    );
    if (viaRunning) return;
  }
  const logger = createLogger({ level: 'warn', destination: process.stderr });
  const stream: Stream = await openStream(config, logger, { transactionalId: `hooklog-actions-${process.pid}` });
  try {
    await stream.append(topic, [actionStreamRecord(record)]);
  } finally {
    await stream.close();
  }
}

/** The admin socket's route for approvals (served by `hooklog start`). */
export function approvalRoute(stream: Stream, prefix: string): (body: unknown) => Promise<ResultSet> {
  return async (body) => {
    const r = body as ActionRecord;
    if (r?.state !== 'approved' || typeof r.action_id !== 'string' || typeof r.org !== 'string')
      throw new Error('not an approval');
    await stream.append(responseTopics(prefix).actions, [actionStreamRecord(r)]);
    return { columns: [], rows: [] };
  };
}

export function registerActionsCommand(program: Command): void {
  const configPath = () => program.opts<{ config?: string }>().config;
  const actions = program
    .command('actions')
    .description('Response actions (config section response:): list them, approve those waiting for approval.');
  actions
    .command('list', { isDefault: true })
    .description(
      'Each action in its latest state, newest first: requested, awaiting_approval, done, failed, uncertain, …',
    )
    .option('--org <org>', 'only this org')
    .option('--state <state>', `only actions in this state (${ACTION_STATES.join(', ')})`)
    .option('--limit <n>', 'most actions shown', '100')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['table', 'json', 'csv']).default('table'))
    .action(async (opts: { org?: string; state?: string; limit: string; format: OutputFormat }) => {
      const { config } = loadConfig(configPath(), process.env, {}, READS_STORE);
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100_000)
        throw new HooklogError('QUERY_INVALID', '--limit must be a whole number from 1 to 100000');
      const sql = actionsQuery({
        ...(opts.org ? { org: opts.org } : {}),
        ...(opts.state ? { state: opts.state } : {}),
        limit,
      });
      process.stdout.write(render(await runSql(config, sql), opts.format));
    });
  actions
    .command('approve')
    .description(
      'Approve an action awaiting approval (or run an uncertain one again): the executor owning its org runs it.',
    )
    .argument('<id>', 'the action id (hooklog actions list)')
    .option('--by <name>', 'who approves (recorded with the action)', userInfo().username)
    .action(async (id: string, opts: { by: string }) => {
      const { config } = loadConfig(configPath(), process.env, {}, READS_STORE);
      const r = await approveAction(config, checkId(id), opts.by, (record) => appendApproval(config, record));
      process.stdout.write(`approved ${r.action_id} (org ${r.org}) by ${r.by}\n`);
    });
}
