/**
 * This release as the markers record it and `hooklog --version` prints it: the version, the oldest release that may
 * run on what it leaves, the ClickHouse schema version (its highest migration) and the record formats per topic.
 */
import { readdirSync } from 'node:fs';
import { assetPath } from '../assets.js';
import { RECORD_FORMATS, describeFormats, type RecordFormat, type TopicFamily } from '../stream/formats.js';
import { HOOKLOG_VERSION, OLDEST_COMPATIBLE } from './release.js';

export interface ReleaseFacts {
  readonly version: string;
  /** The oldest release that may run on a data directory or database this one has used. */
  readonly oldestCompatible: string;
  /** The highest ClickHouse migration this release knows. */
  readonly schema: number;
  readonly formats: Readonly<Record<TopicFamily, RecordFormat>>;
}

/** The highest migration number among `dir`'s `NNN_name.sql` files (migrate.ts's naming rule). */
export function highestMigration(dir: string = assetPath('migrations')): number {
  let highest = 0;
  for (const file of readdirSync(dir)) {
    const m = /^(\d{3,})_[A-Za-z0-9_-]+\.sql$/.exec(file);
    if (m) highest = Math.max(highest, Number(m[1]));
  }
  return highest;
}

export function currentRelease(): ReleaseFacts {
  return {
    version: HOOKLOG_VERSION,
    oldestCompatible: OLDEST_COMPATIBLE,
    schema: highestMigration(),
    formats: RECORD_FORMATS,
  };
}

/** What `hooklog --version` prints. */
export function versionText(release: ReleaseFacts = currentRelease()): string {
  return [
    `hooklog ${release.version}`,
    `ClickHouse schema: ${release.schema} (highest migration, schemas/clickhouse/)`,
    `runs beside, and leaves data readable by: hooklog ${release.oldestCompatible} and later`,
    'record formats per topic (<prefix>.<topic>; "unversioned" is a record without the hooklog-format header, from before 0.2.0):',
    ...describeFormats().map((l) => `  ${l}`),
  ].join('\n');
}
