import { loadConfig, type ProcessOverrides } from './config/load.js';
import { createLogger } from '../platform/log.js';
import { serveAdminSocket } from './admin-socket.js';
import { revokeRoute } from './console-command.js';
import { preflight } from './preflight.js';
import { startHooklog } from './runtime.js';
import { banner } from './routes.js';
import { collectStatus } from './status.js';
import { parseRoles } from '../platform/config/fleet.js';
import { runNamedQuery } from '../analytics/run.js';
import { approvalRoute } from './actions-command.js';
import { riskRoute } from './risk-command.js';
import { alertingAdminRoutes } from './alerting-commands.js';
import { backupHere } from './backup.js';
import { searchAdminRoutes } from './search.js';

const SHUTDOWN_DEADLINE_MS = 60_000;

/** `hooklog start`: run until SIGINT/SIGTERM, then stop in order. */
export async function runStart(
  configPath: string | undefined,
  rolesFlag?: string,
  flags: ProcessOverrides = {},
): Promise<void> {
  const loaded = loadConfig(configPath, process.env, flags, 'all');
  const { config } = loaded;
  const roles = rolesFlag === undefined ? config.roles : parseRoles(rolesFlag);
  // The same checks as check-config, before anything opens: a file start cannot read fails here, in those words.
  await preflight(config, roles);
  const logger = createLogger({
    level: config.log_level,
    format: config.log.format,
    repeatIntervalS: config.log.repeat_interval_s,
  });
  logger.info({ config: loaded.origin, roles }, 'starting hooklog');
  const running = await startHooklog(config, logger, roles);
  const store = running.store;
  // The admin socket serves `hooklog sql` while this process holds embedded ClickHouse; without the store, nothing to
  // serve.
  const closeAdmin = store
    ? await serveAdminSocket(config.data_dir, logger, {
        '/sql': (body) => store.readOnlyQuery((body as { query: string }).query),
        '/query': (body) => {
          const { name, params } = body as { name: string; params: Record<string, string> };
          return runNamedQuery(store, name, params);
        },
        '/status': () => collectStatus(config, running.stream, store),
        '/backup': (body) => backupHere(config, running.stream, store, logger, String((body as { dir?: unknown }).dir)),
        '/risk': riskRoute(config, running.stream, store),
        ...alertingAdminRoutes(config, store),
        ...searchAdminRoutes(store),
        ...(config.response ? { '/actions/approve': approvalRoute(running.stream, config.stream.topic_prefix) } : {}),
        ...(config.console.enabled
          ? { '/console/revoke': revokeRoute(running.stream, config.stream.topic_prefix) }
          : {}),
      })
    : async () => undefined;

  // Every route this process serves, with its URL (cli/routes.ts, the table the HTTP routes reference is made from).
  process.stderr.write(`hooklog serves (roles ${roles.join(', ')}):\n${banner(running.urls)}`);
  if (loaded.generatedDemoSecret) {
    // Printed once, to the terminal only (never to the log), so the operator can call the demo hook.
    process.stderr.write(
      `demo hook secret (generated; set HOOKLOG_DEMO_SECRET to choose one): ${loaded.generatedDemoSecret}\n`,
    );
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping hooklog');
    // A stop that cannot finish (a store that never answers) must not keep the
    // process alive forever; what was not committed is read again on the next start.
    const deadline = setTimeout(() => {
      logger.error({ ms: SHUTDOWN_DEADLINE_MS }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    deadline.unref();
    await closeAdmin();
    await running.stop();
    logger.info('hooklog stopped');
    // Everything is flushed and committed by now. Exit explicitly: after a broker
    // outage kafkajs (2.2) can leave reconnect timers behind its disconnect(), which
    // would keep the event loop alive after an ordered stop. It stays until kafkajs
    // clears them itself; nothing is lost by it, as every stop above has resolved.
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}
