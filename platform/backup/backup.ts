/**
 * `hooklog backup` and `hooklog restore` on the embedded default (README.md beside this file says why it is
 * consistent). The process holding the data directory takes the backup: embedded ClickHouse and the embedded log
 * admit one process, so a running hooklog does it when asked through its admin socket.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { cp, mkdir, open, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { HooklogError } from '../errors.js';
import type { Logger } from '../log.js';
import { packageRoot } from '../assets.js';
import { defaultMigrationsDir, loadMigrations } from '../store/migrate.js';
import type { Store } from '../store/store.js';
import { BACKUP_FORMAT, MANIFEST_FILE, readManifest, type Manifest } from './manifest.js';

/** What `takeBackup` copies from: the running (or just opened) store and embedded log of one data directory. */
interface BackupSource {
  readonly store: Store;
  /** The embedded log (`EmbeddedStream.holdSegments`). */
  readonly log: {
    holdSegments(): { segments: Array<{ path: string; size: number }>; release: () => void };
  };
  /** Where the store's engine may write backups (`OpenStoreOptions.backupDir`); emptied of this backup after. */
  readonly stagingDir: string;
  readonly dataDir: string;
  readonly logger: Logger;
}

/** This hooklog's version (package.json). */
function hooklogVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** The newest schema (migration) this hooklog knows. */
function knownSchemaVersion(): number {
  return Math.max(0, ...loadMigrations(defaultMigrationsDir()).map((m) => m.version));
}

/** Refuses a target that holds anything (a backup never overwrites), or one inside the data directory. */
function checkTarget(target: string, dataDir: string): void {
  const inData = relative(resolve(dataDir), target);
  if (inData === '' || (!inData.startsWith('..') && !inData.startsWith(sep)))
    throw new HooklogError('BACKUP_REFUSED', `the backup directory ${target} is inside the data directory ${dataDir}`);
  if (existsSync(target) && (!statSync(target).isDirectory() || readdirSync(target).length > 0))
    throw new HooklogError('BACKUP_REFUSED', `${target} is not an empty directory: a backup never overwrites one`);
}

/**
 * Backs up the store's database and the embedded log into `target` (absent or empty), consistently: writes to
 * the store are held, then the log's durable length is taken and ClickHouse's BACKUP runs, then writes go on and
 * the log's segments are copied up to that length. Returns the manifest, written last.
 */
export async function takeBackup(src: BackupSource, targetDir: string): Promise<Manifest> {
  const target = resolve(targetDir);
  checkTarget(target, src.dataDir);
  const { store } = src;
  const log = src.logger.child({ component: 'backup', target });
  const staging = join(src.stagingDir, randomUUID());
  await mkdir(join(target, 'stream'), { recursive: true });
  const started = Date.now();
  let schemaVersion: number;
  let tables: Manifest['contents']['tables'];
  // Held from here: no insert or commit of a batch's rows lands in ClickHouse until the release.
  const releaseWrites = await store.holdWrites();
  let held: ReturnType<BackupSource['log']['holdSegments']>;
  try {
    // Every record a batch in ClickHouse came from is in the log by now (a batch is read from durable records),
    // so the copy of the log holds what every insert, and every recorded batch range, refers to.
    held = src.log.holdSegments();
    try {
      const [row] = await store.query<{ v: string | number }>(
        `SELECT max(version) AS v FROM ${store.database}.schema_migrations FINAL`,
      );
      schemaVersion = Number(row?.v ?? 0);
      tables = (
        await store.query<{ name: string; rows: string | number | null }>(
          `SELECT name, total_rows AS rows FROM system.tables WHERE database = {db:String} ORDER BY name`,
          { db: store.database },
        )
      ).map((t) => ({ name: t.name, rows: t.rows === null ? null : Number(t.rows) }));
      await store.backupDatabase(staging);
    } catch (err) {
      held.release();
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
  } finally {
    releaseWrites();
  }
  log.info({ ms: Date.now() - started, tables: tables.length }, 'backup: ClickHouse backed up, writes resumed');
  const files: Manifest['files'] = [];
  let streamBytes = 0;
  try {
    for (const seg of held.segments) {
      const to = join(target, 'stream', basename(seg.path));
      files.push({ path: `stream/${basename(seg.path)}`, ...(await copyPrefix(seg.path, seg.size, to)) });
      streamBytes += seg.size;
    }
  } finally {
    held.release();
  }
  await moveDir(staging, join(target, 'clickhouse'));
  for (const path of await listFiles(join(target, 'clickhouse'))) {
    files.push({ path: relative(target, path).split(sep).join('/'), ...(await hashFile(path)) });
  }
  const manifest: Manifest = {
    format: BACKUP_FORMAT,
    hooklog_version: hooklogVersion(),
    schema_version: schemaVersion,
    created_at: new Date().toISOString(),
    database: store.database,
    contents: { tables, stream: { segments: held.segments.length, bytes: streamBytes } },
    files,
  };
  // Written last, through a rename: a backup cut short has no manifest, and restore refuses it.
  const tmp = join(target, `${MANIFEST_FILE}.tmp`);
  await writeFile(tmp, JSON.stringify(manifest, null, 2) + '\n');
  await syncFile(tmp);
  await rename(tmp, join(target, MANIFEST_FILE));
  await syncFile(target);
  log.info({ ms: Date.now() - started, files: files.length, stream_bytes: streamBytes }, 'backup: written');
  return manifest;
}

/** How `restoreBackup` opens the store of the new data directory, allowed to restore from `backupDir`. */
type OpenStoreFor = (backupDir: string) => Store;

/**
 * Restores the backup in `source` into `dataDir`, which must be absent or empty: the manifest first (format,
 * schema), then every file's size and sha256, then the log's segments and ClickHouse's RESTORE.
 */
export async function restoreBackup(
  sourceDir: string,
  dataDir: string,
  openStoreFor: OpenStoreFor,
  logger: Logger,
): Promise<Manifest> {
  const source = resolve(sourceDir);
  const data = resolve(dataDir);
  const manifest = readManifest(source);
  const known = knownSchemaVersion();
  if (manifest.schema_version > known)
    throw new HooklogError(
      'BACKUP_FORMAT_UNSUPPORTED',
      `the backup in ${source} holds schema ${manifest.schema_version} (hooklog ${JSON.stringify(manifest.hooklog_version)}); ` +
        `this hooklog (${hooklogVersion()}) knows schema ${known} at most: restore it with hooklog ${JSON.stringify(manifest.hooklog_version)} or newer`,
    );
  await verifyFiles(source, manifest);
  if (existsSync(data) && (!statSync(data).isDirectory() || readdirSync(data).length > 0))
    throw new HooklogError(
      'BACKUP_REFUSED',
      `the data directory ${data} is not empty: restore only into an empty (or new) one, with no hooklog running on it`,
    );
  const log = logger.child({ component: 'restore', source, data_dir: data });
  try {
    await mkdir(join(data, 'stream'), { recursive: true });
    for (const f of manifest.files.filter((x) => x.path.startsWith('stream/'))) {
      await copyPrefix(join(source, f.path), f.bytes, join(data, f.path));
    }
    await syncFile(join(data, 'stream'));
    const store = openStoreFor(source);
    try {
      await store.restoreDatabase(join(source, 'clickhouse'), manifest.database);
    } finally {
      await store.close();
    }
  } catch (err) {
    // The directory was empty: leave it so, rather than half a data directory that would start as something.
    for (const entry of existsSync(data) ? readdirSync(data) : [])
      await rm(join(data, entry), { recursive: true, force: true });
    throw err;
  }
  log.info({ tables: manifest.contents.tables.length, segments: manifest.contents.stream.segments }, 'restored');
  return manifest;
}

/** BACKUP_INVALID unless every file the manifest names is there with its size and hash, and no other. */
async function verifyFiles(source: string, manifest: Manifest): Promise<void> {
  const listed = new Set(manifest.files.map((f) => f.path));
  for (const f of manifest.files) {
    const path = join(source, f.path);
    if (!existsSync(path))
      throw new HooklogError('BACKUP_INVALID', `the backup in ${source} is missing ${JSON.stringify(f.path)}`);
    const { bytes, sha256 } = await hashFile(path);
    if (bytes !== f.bytes || sha256 !== f.sha256)
      throw new HooklogError(
        'BACKUP_INVALID',
        `${JSON.stringify(f.path)} in ${source} changed since the backup was taken (${bytes} bytes, sha256 ${sha256.slice(0, 12)}…; the manifest says ${f.bytes}, ${f.sha256.slice(0, 12)}…)`,
      );
  }
  for (const dir of ['stream', 'clickhouse']) {
    for (const path of existsSync(join(source, dir)) ? await listFiles(join(source, dir)) : []) {
      const rel = relative(source, path).split(sep).join('/');
      if (!listed.has(rel))
        throw new HooklogError(
          'BACKUP_INVALID',
          `the backup in ${source} holds ${JSON.stringify(rel)}, which its manifest does not name`,
        );
    }
  }
}

/** Copies the first `bytes` of `from` to `to` (synced), hashing what it copies. */
async function copyPrefix(from: string, bytes: number, to: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  const out = createWriteStream(to);
  if (bytes > 0) {
    await pipeline(
      createReadStream(from, { start: 0, end: bytes - 1 }),
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const c of chunks) {
          hash.update(c);
          yield c;
        }
      },
      out,
    );
  } else {
    await new Promise<void>((ok, fail) => out.end((err?: Error | null) => (err ? fail(err) : ok())));
  }
  await syncFile(to);
  return { bytes, sha256: hash.digest('hex') };
}

async function hashFile(path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const c of createReadStream(path) as AsyncIterable<Buffer>) {
    hash.update(c);
    bytes += c.length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out.sort();
}

/** Renames `from` to `to`, or copies and removes it when they are on different file systems. */
async function moveDir(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await cp(from, to, { recursive: true });
    await rm(from, { recursive: true, force: true });
  }
}

async function syncFile(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
