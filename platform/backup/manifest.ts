/**
 * A backup's manifest (`manifest.json`, written last: a directory without one is no backup): which hooklog took it,
 * the schema it holds, what it holds, and every file's size and sha256, checked before anything is restored.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { HooklogError } from '../errors.js';

/** The layout this hooklog writes and the newest it restores. A change that an older restore would misread bumps it. */
export const BACKUP_FORMAT = 1;

export const MANIFEST_FILE = 'manifest.json';

const fileEntry = z.object({
  /** Relative to the backup directory, with forward slashes. */
  path: z.string().min(1).max(4096),
  bytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

/** Read first, alone: a newer format's other fields are not this hooklog's to judge. */
const formatOnly = z.object({ format: z.number().int().positive(), hooklog_version: z.string().max(100) });

const manifestSchema = z.object({
  format: z.literal(BACKUP_FORMAT),
  hooklog_version: z.string().max(100),
  /** The highest migration applied to the database when the backup was taken. */
  schema_version: z.number().int().nonnegative(),
  created_at: z.string().max(40),
  /** The database backed up, under `clickhouse/` (ClickHouse's BACKUP … TO File layout). */
  database: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
  contents: z.object({
    /** Each table or view and its rows when the backup was taken (views: null). */
    tables: z.array(z.object({ name: z.string().max(200), rows: z.number().int().nonnegative().nullable() })),
    /** The embedded log's segments (`stream/`): every topic's records, committed offsets and the pollers' cursors. */
    stream: z.object({ segments: z.number().int().nonnegative(), bytes: z.number().int().nonnegative() }),
  }),
  files: z.array(fileEntry),
});

export type Manifest = z.infer<typeof manifestSchema>;

/**
 * The manifest of the backup in `dir`, validated: BACKUP_INVALID when it is missing or malformed,
 * BACKUP_FORMAT_UNSUPPORTED when a newer (or unknown) hooklog wrote it.
 */
export function readManifest(dir: string): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8'));
  } catch (err) {
    throw new HooklogError(
      'BACKUP_INVALID',
      `${dir} holds no readable ${MANIFEST_FILE} (an unfinished backup, or not a hooklog backup): ${(err as Error).message}`,
      { cause: err },
    );
  }
  const head = formatOnly.safeParse(raw);
  if (!head.success)
    throw new HooklogError('BACKUP_INVALID', `${dir}/${MANIFEST_FILE} names no backup format: not a hooklog backup`);
  if (head.data.format !== BACKUP_FORMAT)
    throw new HooklogError(
      'BACKUP_FORMAT_UNSUPPORTED',
      `the backup in ${dir} has format ${head.data.format} (written by hooklog ${JSON.stringify(head.data.hooklog_version)}); ` +
        `this hooklog restores format ${BACKUP_FORMAT}: restore it with that hooklog or a newer one`,
    );
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success)
    throw new HooklogError(
      'BACKUP_INVALID',
      `${dir}/${MANIFEST_FILE} is malformed: ${parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.')}: ${i.message}`)
        .join('; ')}`,
    );
  for (const f of parsed.data.files) {
    if (f.path.startsWith('/') || f.path.split('/').includes('..'))
      throw new HooklogError(
        'BACKUP_INVALID',
        `${dir}/${MANIFEST_FILE} names a file outside the backup: ${JSON.stringify(f.path.slice(0, 200))}`,
      );
  }
  return parsed.data;
}
