import { resolve } from 'node:path';
import type { Config } from './config/schema.js';
import { viaAdminSocket } from './admin-socket.js';
import { restoreBackup, takeBackup } from '../platform/backup/backup.js';
import type { Manifest } from '../platform/backup/manifest.js';
import { refuseBesideRunningHooklog } from '../platform/data-dir.js';
import { HooklogError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import { EmbeddedStream } from '../platform/stream/embedded/index.js';
import { openStream } from '../platform/stream/open.js';
import { unwrapRecordFormats } from '../platform/stream/formats.js';
import type { Stream } from '../platform/stream/types.js';
import { defaultBackupDir, openStore, storeOptions } from '../platform/store/index.js';
import type { Store } from '../platform/store/index.js';

/**
 * `hooklog backup` and `hooklog restore` are for the embedded default; a ClickHouse server and Kafka are backed up
 * with their own tools (docs/operate/backups.md), and a command that half-did it would be worse than none.
 */
function refuseServers(config: Config, what: 'backup' | 'restore'): void {
  const servers = [config.store.clickhouse && 'a ClickHouse server', config.stream.kafka && 'Kafka'].filter(Boolean);
  if (servers.length > 0)
    throw new HooklogError(
      'BACKUP_REFUSED',
      `hooklog ${what} covers the embedded store and log; this config uses ${servers.join(' and ')}: back those up with their own tools (BACKUP … TO Disk or S3; the topics), see docs/operate/backups.md`,
    );
}

/** The backup this process takes of the store and log it holds: the running hooklog's admin route `/backup`. */
export function backupHere(config: Config, stream: Stream, store: Store, logger: Logger, dir: string) {
  // openStream wraps the stream for record formats; the segments are the embedded log's own.
  const log = unwrapRecordFormats(stream);
  if (!(log instanceof EmbeddedStream)) refuseServers(config, 'backup');
  return takeBackup(
    {
      store,
      log: log as EmbeddedStream,
      stagingDir: defaultBackupDir(config.data_dir),
      dataDir: config.data_dir,
      logger,
    },
    dir,
  );
}

/**
 * `hooklog backup <dir>`: through the running hooklog when one holds the data directory (it alone may read
 * embedded ClickHouse and the log), else by opening them here.
 */
export async function runBackup(config: Config, dir: string, logger: Logger): Promise<Manifest> {
  refuseServers(config, 'backup');
  const target = resolve(dir);
  const viaRunning = await viaAdminSocket<Manifest>(config.data_dir, '/backup', { dir: target });
  if (viaRunning) return viaRunning;
  await refuseBesideRunningHooklog(config.data_dir, 'embedded ClickHouse');
  const stream = await openStream(config, logger);
  try {
    const store = openStore(storeOptions(config, logger));
    try {
      return await backupHere(config, stream, store, logger, target);
    } finally {
      await store.close();
    }
  } finally {
    await stream.close();
  }
}

/** `hooklog restore <dir>`: into the config's data directory, which must be empty (so no hooklog runs there). */
export async function runRestore(config: Config, dir: string, logger: Logger): Promise<Manifest> {
  refuseServers(config, 'restore');
  await refuseBesideRunningHooklog(config.data_dir, 'embedded ClickHouse');
  return restoreBackup(
    dir,
    config.data_dir,
    (backupDir) => openStore({ ...storeOptions(config, logger), backupDir }),
    logger,
  );
}

/** What the commands print: where, and what the backup holds. */
export function describeBackup(m: Manifest, dir: string, verb: 'written to' | 'restored from'): string {
  const rows = m.contents.tables.reduce((n, t) => n + (t.rows ?? 0), 0);
  return (
    `backup ${verb} ${resolve(dir)}: hooklog ${m.hooklog_version}, schema ${m.schema_version}, taken ${m.created_at}\n` +
    `  database ${m.database}: ${m.contents.tables.length} tables and views, ${rows} rows\n` +
    `  embedded log: ${m.contents.stream.segments} segments, ${m.contents.stream.bytes} bytes (records, committed offsets, cursors)\n` +
    `  ${m.files.length} files, each checked by sha256 on restore\n`
  );
}
