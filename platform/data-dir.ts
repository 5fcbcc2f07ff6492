/**
 * What lives in `data_dir` that more than one process looks at: the running
 * hooklog's admin socket. Embedded ClickHouse (and the embedded log) admit one
 * process per directory, so a command first asks whether a hooklog is running
 * there: if so it goes through that process (cli/admin-socket.ts) or says in
 * one line why it cannot.
 */
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join, resolve } from 'node:path';
import { HooklogError } from './errors.js';

/** The running hooklog's admin socket: `<data_dir>/hooklog.sock`, mode 0600. */
export function adminSocketPath(dataDir: string): string {
  return join(resolve(dataDir), 'hooklog.sock');
}

/** Whether a hooklog holding `dataDir` is running: its admin socket accepts a connection. */
export function runningHooklog(dataDir: string): Promise<boolean> {
  const path = adminSocketPath(dataDir);
  if (!existsSync(path)) return Promise.resolve(false);
  return new Promise((ok) => {
    const socket = createConnection(path);
    socket.once('connect', () => {
      socket.destroy();
      ok(true);
    });
    socket.once('error', () => ok(false));
  });
}

/**
 * The one line a command prints when what it needs in `dataDir` (embedded
 * ClickHouse, or the embedded log) belongs to the hooklog running there, and
 * it cannot ask that process instead.
 */
export function heldByRunningHooklog(
  dataDir: string,
  what: 'embedded ClickHouse' | 'the embedded log',
  cause?: unknown,
): HooklogError {
  const alternative =
    what === 'embedded ClickHouse' ? 'a ClickHouse server (store.clickhouse)' : 'Kafka (stream.kafka)';
  return new HooklogError(
    what === 'embedded ClickHouse' ? 'STORE_UNAVAILABLE' : 'STREAM_UNAVAILABLE',
    `${what} in ${resolve(dataDir)} is held by the hooklog running there (one process at a time); stop it and run this again, or run hooklog with ${alternative}`,
    { cause },
  );
}

/** Throws `heldByRunningHooklog` when a hooklog is running on `dataDir`. */
export async function refuseBesideRunningHooklog(
  dataDir: string,
  what: 'embedded ClickHouse' | 'the embedded log',
): Promise<void> {
  if (await runningHooklog(dataDir)) throw heldByRunningHooklog(dataDir, what);
}
