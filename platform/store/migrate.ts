import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assetPath } from '../assets.js';
import { HooklogError, errorMessage, isRetriable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from './store.js';
import { currentRelease, type ReleaseFacts } from '../release/current.js';
import { checkStoreRelease, recordStoreRelease } from './release-marker.js';

/**
 * Schema migrations: `schemas/clickhouse/NNN_name.sql`, applied in version order
 * and recorded in `{db}.schema_migrations`.
 *
 * Concurrency: there is no lock (ClickHouse has none to offer across servers
 * and chdb processes). Instead every statement in a migration must be safe to
 * run again — `CREATE … IF NOT EXISTS`, `ADD COLUMN IF NOT EXISTS`, a `MODIFY
 * COLUMN` to the type it already has — so two processes migrating at once both
 * succeed, and a process that died between a statement and its record simply
 * runs the file again. `schema_migrations` is a ReplacingMergeTree keyed by
 * version, so a version recorded twice by racing processes folds into one row.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly file: string;
  /** sha256 of the file's bytes: an applied migration must never change. */
  readonly checksum: string;
  /** Statements with `{db}` still in place. */
  readonly statements: readonly string[];
}

const FILE_NAME = /^(\d{3,})_([A-Za-z0-9_-]+)\.sql$/;

/**
 * Splits a migration into statements: a statement ends at a line whose last
 * non-blank character is `;` (comment lines never end one). Chunks holding only
 * comments are dropped, since ClickHouse refuses an empty query.
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let current: string[] = [];
  const flush = (): void => {
    const text = current.join('\n').trim();
    current = [];
    const hasCode = text.split('\n').some((l) => l.trim() !== '' && !l.trim().startsWith('--'));
    if (hasCode) out.push(text);
  };
  for (const line of sql.split(/\r?\n/)) {
    const trimmed = line.trimEnd();
    if (trimmed.endsWith(';') && !trimmed.trimStart().startsWith('--')) {
      current.push(trimmed.slice(0, -1));
      flush();
    } else {
      current.push(line);
    }
  }
  flush();
  return out;
}

/** Substitutes the database for the literal `{db}` placeholder (the name is a validated identifier). */
export function renderStatement(statement: string, database: string): string {
  return statement.replaceAll('{db}', database);
}

/** Reads every migration file of `dir`, sorted by version; duplicate versions are refused. */
export function loadMigrations(dir: string): Migration[] {
  const migrations: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    const m = FILE_NAME.exec(file);
    if (!m) continue;
    const bytes = readFileSync(join(dir, file));
    migrations.push({
      version: Number(m[1]),
      name: m[2]!,
      file,
      checksum: createHash('sha256').update(bytes).digest('hex'),
      statements: splitStatements(bytes.toString('utf8')),
    });
  }
  migrations.sort((a, b) => a.version - b.version);
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i]!.version === migrations[i - 1]!.version) {
      throw new HooklogError(
        'MIGRATION_FAILED',
        `migrations ${migrations[i - 1]!.file} and ${migrations[i]!.file} share version ${migrations[i]!.version}`,
      );
    }
  }
  return migrations;
}

/** Where the migration files are: the `migrations` asset (platform/assets.ts), in every layout hooklog runs in. */
export function defaultMigrationsDir(): string {
  const dir = assetPath('migrations');
  if (!existsSync(dir)) throw new HooklogError('MIGRATION_FAILED', `no migrations directory at ${dir}`);
  return dir;
}

interface AppliedRow {
  version: number | string;
  name: string;
  checksum: string;
}

/**
 * Brings the store's schema up to date: refuses (RELEASE_REFUSED, before writing anything) a database a newer
 * release has made require a newer hooklog than `opts.release` (this one), records this release in it
 * (release-marker.ts), creates the database and the migrations table if missing, refuses to start
 * (MIGRATION_FAILED naming the file) when an applied migration's file changed since, then applies and records the
 * pending files in order. Running it again applies nothing.
 */
export async function migrate(
  store: Store,
  logger: Logger,
  opts: { dir?: string; release?: ReleaseFacts } = {},
): Promise<{ applied: string[] }> {
  const log = logger.child({ component: 'migrate', database: store.database });
  const migrations = loadMigrations(opts.dir ?? defaultMigrationsDir());
  const release = opts.release ?? currentRelease();
  const db = store.database;
  await checkStoreRelease(store, release);
  await store.command(`CREATE DATABASE IF NOT EXISTS ${db}`);
  // Before the migrations: an older release must refuse even a database whose migration this start did not finish.
  await recordStoreRelease(store, release);
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${db}.schema_migrations (
       version UInt32,
       name String,
       checksum String,
       applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
     ) ENGINE = ReplacingMergeTree ORDER BY version`,
  );
  const rows = await store.query<AppliedRow>(
    `SELECT version, name, checksum FROM ${db}.schema_migrations FINAL ORDER BY version`,
  );
  const applied = new Map(rows.map((r) => [Number(r.version), r]));

  for (const m of migrations) {
    const row = applied.get(m.version);
    if (row && row.checksum !== m.checksum) {
      throw new HooklogError(
        'MIGRATION_FAILED',
        `migration ${m.file} was changed after it was applied (recorded checksum ${row.checksum.slice(0, 12)}…, file ${m.checksum.slice(0, 12)}…); ` +
          'add a new migration instead of editing an applied one',
      );
    }
  }
  const known = new Set(migrations.map((m) => m.version));
  for (const r of rows) {
    // A newer release's migration that this release may run beside (its marker allowed this start): an expansion.
    if (!known.has(Number(r.version)))
      log.warn({ version: Number(r.version), name: r.name }, 'migration_applied_but_unknown_to_this_version');
  }

  const done: string[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    const started = Date.now();
    for (const [i, statement] of m.statements.entries()) {
      try {
        await store.command(renderStatement(statement, db));
      } catch (err) {
        throw new HooklogError('MIGRATION_FAILED', `migration ${m.file}, statement ${i + 1}: ${errorMessage(err)}`, {
          retriable: isRetriable(err),
          cause: err,
        });
      }
    }
    await store.insertJson('schema_migrations', [{ version: m.version, name: m.name, checksum: m.checksum }]);
    log.info(
      { version: m.version, name: m.name, statements: m.statements.length, ms: Date.now() - started },
      'migration_applied',
    );
    done.push(m.file);
  }
  return { applied: done };
}
