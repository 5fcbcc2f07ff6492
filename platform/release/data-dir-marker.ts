/**
 * The data directory's release marker, `<data_dir>/hooklog-release.json`: which releases have run on the directory
 * and the oldest release that may still run on it (`requires`, the highest OLDEST_COMPATIBLE of any release that
 * ran there). Checked before anything in the directory is opened or written, so an older hooklog refuses a
 * directory a newer one has made unreadable to it, naming both versions, and leaves it exactly as it was; then
 * recorded at every start. A release before 0.2.0 neither reads nor writes it (it cannot be taught to refuse);
 * from 0.2.0 on every release does.
 *
 * The marker's own shape never changes meaning (a release must read every later release's marker): new fields may
 * be added, never renamed or repurposed.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { HooklogError, errorMessage } from '../errors.js';
import type { ReleaseFacts } from './current.js';
import { compareVersions, isVersion, laterVersion } from './release.js';

export const DATA_DIR_MARKER = 'hooklog-release.json';
const MAX_MARKER_BYTES = 64 * 1024;

interface ReleaseEntry {
  readonly requires: string;
  readonly schema: number;
  readonly formats: Record<string, { writes: number; reads: readonly number[] }>;
  readonly last_started_at: string;
}

export interface DataDirMarker {
  /** The newest release that has run on this directory. */
  readonly newest: string;
  /** The oldest release that may run on it. */
  readonly requires: string;
  /** Per release that ran here: what it required and wrote. */
  readonly releases: Readonly<Record<string, ReleaseEntry>>;
}

function markerPath(dataDir: string): string {
  return join(resolve(dataDir), DATA_DIR_MARKER);
}

/** The marker, or null when the directory has none (new, or last run by a release before 0.2.0). */
export function readDataDirMarker(dataDir: string): DataDirMarker | null {
  const path = markerPath(dataDir);
  if (!existsSync(path)) return null;
  const unreadable = (why: string) =>
    new HooklogError(
      'RELEASE_REFUSED',
      `${path} is not a release marker hooklog can read (${why}): it says which hooklog may run on this data directory, so this one refuses to guess; start the release that wrote it`,
    );
  let parsed: unknown;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_MARKER_BYTES) throw unreadable(`larger than ${MAX_MARKER_BYTES} bytes`);
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    if (err instanceof HooklogError) throw err;
    throw unreadable(errorMessage(err).slice(0, 200));
  }
  const m = parsed as Partial<DataDirMarker> | null;
  if (!m || typeof m !== 'object' || !isVersion(m.newest) || !isVersion(m.requires)) {
    throw unreadable('no valid "newest" and "requires" versions');
  }
  const releases = m.releases && typeof m.releases === 'object' ? m.releases : {};
  return { newest: m.newest, requires: m.requires, releases };
}

/**
 * Throws RELEASE_REFUSED when a release newer than `release` has made this directory require a newer hooklog.
 * Reads only: a refused start leaves the directory as it was.
 */
export function checkDataDir(dataDir: string, release: ReleaseFacts): DataDirMarker | null {
  const marker = readDataDirMarker(dataDir);
  if (marker && compareVersions(release.version, marker.requires) < 0) {
    throw new HooklogError(
      'RELEASE_REFUSED',
      `data directory ${resolve(dataDir)} was used by hooklog ${marker.newest}, which needs hooklog ${marker.requires} or later to run on it; this is hooklog ${release.version}, and starting it would write events where ${marker.newest} no longer reads them. Start hooklog ${marker.requires} or later (or restore a backup taken before the upgrade)`,
    );
  }
  return marker;
}

/** Checks the directory (checkDataDir), then records this start in its marker (written whole, then renamed). */
export function claimDataDir(dataDir: string, release: ReleaseFacts, now: Date = new Date()): void {
  const before = checkDataDir(dataDir, release);
  const marker: DataDirMarker = {
    newest: before ? laterVersion(before.newest, release.version) : release.version,
    requires: before ? laterVersion(before.requires, release.oldestCompatible) : release.oldestCompatible,
    releases: {
      ...before?.releases,
      [release.version]: {
        requires: release.oldestCompatible,
        schema: release.schema,
        formats: release.formats,
        last_started_at: now.toISOString(),
      },
    },
  };
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const path = markerPath(dir);
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o644);
  try {
    writeSync(fd, JSON.stringify(marker, null, 2) + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
