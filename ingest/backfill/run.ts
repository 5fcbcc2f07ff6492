/**
 * The `hooklog backfill` command: a process of its own beside `hooklog
 * start`, with the same config. It opens the stream with its own transactional
 * id (never fencing the running hooklog's producer; stable per window, so a
 * rerun after `kill -9` fences its own zombie), and the org's rate budget
 * ledger under data_dir, which the live poller shares.
 */
import { join } from 'node:path';
import type { PlatformConfig } from '../../platform/config/schema.js';
import type { OrgConfig } from '../config.js';
import { HooklogError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log.js';
import { ensureHooklogTopics, openStream } from '../../platform/stream/open.js';
import { IdentityClient } from '../../platform/identity/client.js';
import { withPolicies, type IdpPolicies } from '../../platform/identity/policies.js';
import { budgetFor, pollerAuthenticator } from '../index.js';
import { backfillKey, checkWindow, runBackfill, type BackfillProgress, type BackfillSource } from './backfill.js';
import { progressWriter } from './progress.js';

export interface BackfillCommand {
  readonly org: string;
  readonly source: BackfillSource;
  readonly since: string;
  readonly until: string;
  readonly policies?: Partial<IdpPolicies>;
}

/** What the command reads of the whole config (composed in cli/). */
export type BackfillConfig = PlatformConfig & { readonly orgs: readonly OrgConfig[] };

export async function backfillCommand(
  config: BackfillConfig,
  cmd: BackfillCommand,
  logger: Logger,
  out: NodeJS.WritableStream & { isTTY?: boolean },
): Promise<BackfillProgress> {
  const org = config.orgs.find((o) => o.id === cmd.org);
  if (!org) throw new HooklogError('CONFIG_INVALID', `--org: no org ${JSON.stringify(cmd.org)} in the config's orgs`);
  const sinceMs = Date.parse(cmd.since);
  const untilMs = Date.parse(cmd.until);
  checkWindow(sinceMs, untilMs, Date.now());
  const section = cmd.source === 'logs' ? org.system_log : org.legacy_events;
  const key = backfillKey(cmd.source, org.id, sinceMs, untilMs);
  const txId = `${config.stream.kafka?.client_id ?? 'hooklog'}.${key.replace(/[^A-Za-z0-9._-]/g, '_')}`;
  const stream = await openStream(config, logger, { transactionalId: txId });
  try {
    const topics = await ensureHooklogTopics(stream, config);
    const latest = await stream.readLatestByKey(topics.cursors);
    const policies = withPolicies(cmd.policies);
    const budget = budgetFor(
      { budgetDir: join(config.data_dir, 'rate-budget') },
      org.id,
      cmd.source === 'logs' ? 'system-log' : 'legacy-events',
      section.rate_limit_share,
    );
    let requests = 0;
    const client = new IdentityClient({
      org: org.id,
      auth: await pollerAuthenticator(org, logger),
      requestTimeoutMs: org.request_timeout_ms,
      policies,
      events: {
        reply: () => void requests++,
        retry: (err, attempt, delayMs) =>
          logger.info({ code: err.code, attempt, delay_ms: delayMs }, 'backfill_request_retry'),
        rateLimited: (delayMs) => logger.warn({ delay_ms: delayMs }, 'backfill_rate_limited'),
      },
    });
    const writer = progressWriter(out);
    const abort = new AbortController();
    const onSignal = () =>
      abort.abort(new HooklogError('STREAM_CLOSED', 'backfill interrupted; run the same command again to resume'));
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      const final = await runBackfill(
        {
          org: org.id,
          baseUrl: org.base_url,
          source: cmd.source,
          sinceMs,
          untilMs,
          client,
          budget,
          stream,
          topics,
          policies,
          requests: () => requests,
          onProgress: (p) => writer.update(p),
          signal: abort.signal,
        },
        latest,
      );
      writer.finish(final);
      return final;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  } finally {
    await stream.close();
  }
}
