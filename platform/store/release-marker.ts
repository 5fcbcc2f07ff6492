/**
 * The database's release marker, `{db}.hooklog_versions`: one row per release that has started on the database,
 * with the oldest release that may run on what it leaves (`requires`). migrate() checks it before it writes
 * anything (before even `CREATE DATABASE`), so an older hooklog refuses a database a newer one has made
 * unreadable to it, naming both versions; then records this start, and only then migrates. The data directory
 * has its own marker (platform/release/data-dir-marker.ts); this one covers a ClickHouse server shared by a fleet
 * as well as embedded ClickHouse.
 *
 * The table is not a migration: it must exist before migrations run, and its shape never changes meaning (every
 * release reads every later release's rows). Columns may be added, never renamed or repurposed.
 */
import { HooklogError } from '../errors.js';
import type { ReleaseFacts } from '../release/current.js';
import { compareVersions, isVersion, laterVersion } from '../release/release.js';
import type { Store } from './store.js';

const TABLE = 'hooklog_versions';

interface MarkerRow {
  version: string;
  requires: string;
}

/** The newest release recorded and the oldest release any recorded one allows, or null when none is. */
async function readMarker(store: Store): Promise<{ newest: string; requires: string } | null> {
  const db = store.database;
  const exists = await store.query<{ n: number | string }>(
    `SELECT count() AS n FROM system.tables WHERE database = {db:String} AND name = {t:String}`,
    { db, t: TABLE },
  );
  if (Number(exists[0]?.n ?? 0) === 0) return null;
  const rows = await store.query<MarkerRow>(`SELECT version, requires FROM ${db}.${TABLE} FINAL`);
  let found: { newest: string; requires: string } | null = null;
  for (const r of rows) {
    if (!isVersion(r.version) || !isVersion(r.requires)) {
      throw new HooklogError(
        'RELEASE_REFUSED',
        `${db}.${TABLE} holds a row hooklog cannot read (version ${JSON.stringify(String(r.version).slice(0, 40))}); it says which hooklog may run on this database, so this one refuses to guess`,
      );
    }
    found = found
      ? { newest: laterVersion(found.newest, r.version), requires: laterVersion(found.requires, r.requires) }
      : { newest: r.version, requires: r.requires };
  }
  return found;
}

/** Throws RELEASE_REFUSED when a newer release made this database need a newer hooklog than `release`. Reads only. */
export async function checkStoreRelease(store: Store, release: ReleaseFacts): Promise<void> {
  const marker = await readMarker(store);
  if (marker && compareVersions(release.version, marker.requires) < 0) {
    throw new HooklogError(
      'RELEASE_REFUSED',
      `ClickHouse database ${store.database} was migrated by hooklog ${marker.newest}, which needs hooklog ${marker.requires} or later to run on it; this is hooklog ${release.version}, and starting it would write rows where ${marker.newest} no longer reads them. Start hooklog ${marker.requires} or later (or restore a backup taken before the upgrade)`,
    );
  }
}

/** Records this start (the database exists by now). A release's row is replaced by its next start. */
export async function recordStoreRelease(store: Store, release: ReleaseFacts): Promise<void> {
  const db = store.database;
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${db}.${TABLE} (
       version String,
       requires String,
       schema UInt32,
       formats String,
       started_at DateTime64(3, 'UTC') DEFAULT now64(3)
     ) ENGINE = ReplacingMergeTree(started_at) ORDER BY version`,
  );
  await store.insertJson(TABLE, [
    {
      version: release.version,
      requires: release.oldestCompatible,
      schema: release.schema,
      formats: JSON.stringify(release.formats),
    },
  ]);
}
