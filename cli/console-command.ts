/**
 * `hooklog console revoke --user <login>`: ends every session of a user on
 * every instance of the fleet, now. It appends one revocation to
 * `<prefix>.console-sessions` (console/revocations.ts), the record a sign-out
 * appends for one session: every instance's view has it within a second and
 * refuses the user's sessions begun up to now; signing in again afterwards works
 * (remove the user's grant at the identity service to keep them out).
 */
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { loadConfig } from './config/load.js';
import type { Config } from './config/schema.js';
import { postToAdminSocket } from './admin-socket.js';
import type { ResultSet } from './format.js';
import { HooklogError } from '../platform/errors.js';
import { createLogger } from '../platform/log.js';
import { openStream } from '../platform/stream/open.js';
import type { Stream } from '../platform/stream/types.js';
import { consoleSessionsTopic, revocationRecord, userRevocation, type Revocation } from '../console/index.js';

const MAX_USER_CHARS = 256;

/** A login or subject as given on the command line: bounded, printable. */
export function checkUser(user: string): string {
  const u = user.trim();
  if (u === '' || u.length > MAX_USER_CHARS || /[\p{Cc}\p{Cf}]/u.test(u))
    throw new HooklogError(
      'CONFIG_INVALID',
      `--user must be a login or user id of 1 to ${MAX_USER_CHARS} printable characters`,
    );
  return u;
}

async function appendOwn(config: Config, r: Revocation): Promise<void> {
  const topic = consoleSessionsTopic(config.stream.topic_prefix);
  const logger = createLogger({ level: 'warn', destination: process.stderr });
  const stream: Stream = await openStream(config, logger, { transactionalId: `hooklog-console-${process.pid}` });
  try {
    await stream.ensureTopics([{ name: topic, partitions: config.stream.partitions, compacted: true }]);
    await stream.append(topic, [revocationRecord(r)]);
  } finally {
    await stream.close();
  }
}

/** Appends the revocation: through a running hooklog holding the embedded log, else on a stream of our own. */
async function appendRevocation(config: Config, r: Revocation): Promise<void> {
  if (!config.stream.kafka) {
    const viaRunning = await postToAdminSocket(
      config.data_dir,
      '/console/revoke',
      r,
      (e) => new HooklogError('INTERNAL', e),
    );
    if (viaRunning) return;
  }
  await appendOwn(config, r);
}

/** The admin socket's route for revocations (served by `hooklog start`). */
export function revokeRoute(stream: Stream, prefix: string): (body: unknown) => Promise<ResultSet> {
  return async (body) => {
    const r = body as Revocation;
    if (r?.v !== 1 || r.kind !== 'user' || typeof r.user !== 'string') throw new Error('not a user revocation');
    await stream.append(consoleSessionsTopic(prefix), [revocationRecord({ ...r, user: checkUser(r.user) })]);
    return { columns: [], rows: [] };
  };
}

export function registerConsoleCommand(program: Command): void {
  const configPath = () => program.opts<{ config?: string }>().config;
  const consoleCommand = program.command('console').description("The analysts' web console (config section console:).");
  consoleCommand
    .command('revoke')
    .description(
      "End every session of a user now, on every instance (within a second): the user's sessions begun up to now are refused; signing in again works unless the identity service's grant is removed too.",
    )
    .requiredOption('--user <login>', 'the login (as the console shows it) or the user id (subject)')
    .option('--by <name>', 'who revokes (recorded with the revocation)', userInfo().username)
    .action(async (opts: { user: string; by: string }) => {
      const { config } = loadConfig(configPath());
      if (!config.console.enabled)
        throw new HooklogError('CONFIG_INVALID', 'the console is not enabled in this config (console.enabled)');
      const r = userRevocation(
        checkUser(opts.user),
        opts.by.slice(0, MAX_USER_CHARS),
        config.console.session_ttl_minutes,
        Date.now(),
      );
      await appendRevocation(config, r);
      process.stdout.write(`revoked every session of ${JSON.stringify(r.user)} begun up to ${r.at}\n`);
    });
}
