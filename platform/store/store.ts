import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import {
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ClickHouseClientConfigOptions,
  type ClickHouseSettings,
  type Logger as ClientLogger,
} from '@clickhouse/client';
import { createRequire } from 'node:module';
import { HooklogError } from '../errors.js';
import type { Logger } from '../log.js';
import { classifyClickHouseError } from './errors.js';
import { ChdbInserters } from './chdb-inserts.js';
import { ChdbThread } from './chdb-thread.js';
import { ReadOnlyRunner, type ReadOnlyResult } from './read-only.js';

/** Query parameters, bound server-side as `{name:Type}` placeholders; never spliced into SQL. */
export type QueryParams = Readonly<Record<string, unknown>>;

/**
 * hooklog's handle on ClickHouse: a server over HTTP, or chdb embedded in the
 * process. The same SQL runs on both. Every failure is a `HooklogError`
 * classified by `classifyClickHouseError` (so callers can trust `retriable`).
 *
 * Table names in SQL are always qualified (`${store.database}.events`): the chdb
 * connection ignores the client's `database` option, and a server client must
 * not depend on a database that migrations have yet to create.
 */
export interface Store {
  readonly kind: 'server' | 'embedded';
  /** Validated identifier, safe to splice as `${database}.table`. */
  readonly database: string;
  /**
   * The underlying client, for callers that need a format or setting the
   * methods below do not offer. Errors from it are not classified. On the
   * embedded kind, settings passed here become session-wide (chdb applies them
   * as `SET`s), so never pass one that must not outlive the call.
   */
  readonly client: ClickHouseClient;
  /** Runs a statement that returns no rows (DDL, INSERT … SELECT, OPTIMIZE). */
  command(sql: string, params?: QueryParams): Promise<void>;
  /** Runs a SELECT and returns its rows (JSONEachRow; 64-bit integers arrive as strings). */
  query<T>(sql: string, params?: QueryParams): Promise<T[]>;
  /**
   * Inserts `rows` into `${database}.${table}` as one block. With `dedupToken`,
   * a repeat of the same insert (same token) is dropped by ClickHouse, provided
   * the table has a deduplication window (see schemas/clickhouse/001_events.sql).
   */
  insertJson(table: string, rows: readonly object[], opts?: { dedupToken?: string }): Promise<void>;
  /**
   * Inserts ready-made TabSeparated rows (`body`, each row ending in a line feed, fields in `columns`'
   * order) into `${database}.${table}` as one block, with the same dedup token rule as `insertJson`, which
   * holds in every table a materialized view writes from the insert too.
   * The bytes go to ClickHouse as they are; on the embedded kind several run at once (chdb-inserts.ts).
   */
  insertTsv(table: string, columns: readonly string[], body: Buffer, opts?: TsvInsertOptions): Promise<void>;
  /**
   * Runs untrusted, ad-hoc SQL on a separate read-only connection (writes,
   * DDL and setting changes are refused by ClickHouse); unqualified table
   * names resolve to `database`. For `hooklog sql` and the admin socket.
   */
  readOnlyQuery(sql: string): Promise<ReadOnlyResult>;
  /**
   * Holds every later write (`command`, `insertJson`, `insertTsv`) until the returned release is called, once the
   * writes already running have ended: what the store holds then stays as it is (merges aside) while a backup is
   * taken (platform/backup/). Writers wait, they are not refused; reads go on.
   */
  holdWrites(): Promise<() => void>;
  /**
   * Embedded only: `BACKUP DATABASE <database> TO File(dir)`, `dir` inside the directory the engine allows backups
   * in (`OpenStoreOptions.backupDir`). Runs whether or not writes are held.
   */
  backupDatabase(dir: string): Promise<void>;
  /**
   * Embedded only: `RESTORE DATABASE <from> AS <database> FROM File(dir)`, `dir` inside `OpenStoreOptions.backupDir`.
   */
  restoreDatabase(dir: string, from: string): Promise<void>;
  /** Throws a classified error when the store cannot answer a query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface TsvInsertOptions {
  readonly dedupToken?: string;
  /**
   * Fold rows with equal sorting keys within this block as the insert writes it (ClickHouse's
   * optimize_on_insert, its default: true). A table that folds at merge time and under FINAL anyway
   * (the events and arrivals tables) needs none of it from a writer whose blocks rarely hold copies.
   */
  readonly foldOnInsert?: boolean;
}

export interface OpenStoreOptions {
  /** ClickHouse HTTP(S) URL; unset means embedded chdb under `dataDir`. */
  readonly url?: string;
  readonly username?: string;
  readonly password?: string;
  /** Database holding hooklog's tables; created by `migrate`. */
  readonly database: string;
  /** Data directory; chdb keeps its files in `<dataDir>/clickhouse`. One path per process. */
  readonly dataDir: string;
  /** Per-request timeout against a server. Default 30 000 ms. */
  readonly requestTimeoutMs?: number;
  readonly logger: Logger;
  /**
   * Embedded only: the one directory (and below) the engine may write backups to and restore them from
   * (ClickHouse's `backups.allowed_path`). Default `<dataDir>/backup-staging`. It is server configuration, fixed
   * when the process's first connection to the directory opens, and `readonly` does not refuse a BACKUP: so it
   * is a directory of hooklog's own, never the whole disk, and `hooklog sql` can at most write a copy there.
   */
  readonly backupDir?: string;
  /**
   * Embedded only: load and open the engine on a thread of its own (chdb-thread.ts), which then runs every
   * statement, rather than on the calling thread. `openStore` then returns at once, and statements sent before
   * the engine is open wait for it; a failure to open fails them. For `hooklog start`, whose event loop serves
   * hooks meanwhile; a process must not load chdb on its main thread as well (chdb-thread.ts says why).
   */
  readonly thread?: boolean;
}

/** Where the embedded engine may write backups when `OpenStoreOptions.backupDir` is not given. */
export function defaultBackupDir(dataDir: string): string {
  return resolve(dataDir, 'backup-staging');
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Throws CONFIG_INVALID unless `name` is a plain identifier (it is spliced into SQL as one). */
export function assertIdentifier(name: string, what: string): string {
  if (!IDENTIFIER.test(name)) {
    throw new HooklogError('CONFIG_INVALID', `${what} ${JSON.stringify(name)} must match ${IDENTIFIER.source}`);
  }
  return name;
}

/**
 * Settings sent with every request, the same on both kinds so results do not
 * depend on where the SQL runs:
 * - 64-bit integers are quoted in JSON (the server's default; chdb's differs),
 *   so counts and offsets are never silently rounded;
 * - inserts are synchronous: an insert resolves only once its part is written,
 *   which is what lets the sink commit offsets after it, and what makes
 *   `insert_deduplication_token` apply (async inserts do not deduplicate).
 */
const COMMON_SETTINGS: ClickHouseSettings = {
  output_format_json_quote_64bit_integers: 1,
  async_insert: 0,
  insert_deduplicate: 1,
};

/**
 * Embedded raw inserts that may run at once: one per core of the machines hooklog is sized for (the sink
 * inserts a partition's batch at a time, so more would only queue), each its own chdb connection.
 */
const EMBEDDED_INSERT_CONNECTIONS = 2;

/**
 * The settings of one `insertTsv`, the same on both kinds (on chdb in the statement itself, to a server as the
 * request's settings), whatever the session, user profile or server defaults say:
 * - as COMMON_SETTINGS: synchronous, deduplicated by the token (empty: none);
 * - `deduplicate_blocks_in_dependent_materialized_views`: a repeat of the token is dropped in every table a
 *   view writes from this insert too, not only in the table named. The sink's events go into a Null table
 *   (migration 013) whose view writes the events table, and a view on that writes arrivals (031; 032 for v4),
 *   whose `copies` is a sum: without it a replayed batch would be written again in both (chdb 26.7 defaults
 *   to 1; an older server's default or a profile may say 0);
 * - parsed on the inserting thread: the sink already inserts partitions side by side, and splitting one body
 *   across threads as well cost more CPU than it saved time (chdb, 5,000-row batches);
 * - `optimize_on_insert` from `foldOnInsert`.
 */
function tsvInsertSettings(opts: TsvInsertOptions) {
  return {
    async_insert: 0,
    insert_deduplicate: 1,
    insert_deduplication_token: opts.dedupToken ?? '',
    deduplicate_blocks_in_dependent_materialized_views: 1,
    input_format_parallel_parsing: 0,
    optimize_on_insert: opts.foldOnInsert === false ? 0 : 1,
  } as const;
}

/** Opens a store. Does not contact it: call `ping()` (readiness) and `migrate()` (schema). */
export function openStore(opts: OpenStoreOptions): Store {
  const database = assertIdentifier(opts.database, 'store database');
  const log = clientLog(opts.logger);
  if (opts.url) {
    const server = {
      url: opts.url,
      username: opts.username,
      password: opts.password,
      request_timeout: opts.requestTimeoutMs ?? 30_000,
      log,
    };
    const client = createClient({ ...server, clickhouse_settings: COMMON_SETTINGS });
    const readOnly = () =>
      createClient({ ...server, database, clickhouse_settings: { ...COMMON_SETTINGS, readonly: '2' } });
    return new ClickHouseStore(client, 'server', database, opts.logger, readOnly, null);
  }
  const path = resolve(opts.dataDir, 'clickhouse');
  mkdirSync(path, { recursive: true });
  // The engine is one per process and takes its configuration from the first connection to the directory: the
  // holder, kept open as long as the store, is that first connection (chdb/connection cannot pass arguments).
  const connectionArgs = [`--backups.allowed_path=${opts.backupDir ?? defaultBackupDir(opts.dataDir)}/`];
  if (opts.thread) {
    const thread = new ChdbThread({ path, connectionArgs, logger: opts.logger });
    const onThread = () => thread.connection() as unknown as NonNullable<ClickHouseClientConfigOptions['connection']>;
    const client = createClient({ connection: onThread(), clickhouse_settings: COMMON_SETTINGS, log });
    const readOnly = () => createClient({ connection: onThread(), log });
    const inserters = new ChdbInserters(() => thread.rawConnection(), EMBEDDED_INSERT_CONNECTIONS);
    return new ClickHouseStore(client, 'embedded', database, opts.logger, readOnly, inserters, () => thread.close());
  }
  // chdb implements @clickhouse/client-common's Connection; @clickhouse/client
  // bundles its own copy of those types (one patch version apart), so the two
  // are structurally the same contract but not assignable as declared.
  // chdb is loaded here, not at import: its library maps ~180 MB and allocates more when it loads, which a
  // process that never opens embedded ClickHouse (receivers, pollers, a server store) should not carry.
  const { createChdbConnection } = loadChdb();
  const { Session } = createRequire(import.meta.url)('chdb') as typeof import('chdb');
  const holder = new Session(path, { connectionArgs });
  const chdb = () =>
    createChdbConnection({ path }) as unknown as NonNullable<ClickHouseClientConfigOptions['connection']>;
  const client = createClient({ connection: chdb(), clickhouse_settings: COMMON_SETTINGS, log });
  // No client-wide settings on the read-only connection: they would be re-SET
  // before every query, which readonly=1 refuses.
  const readOnly = () => createClient({ connection: chdb(), log });
  const inserters = new ChdbInserters(() => createChdbConnection({ path }), EMBEDDED_INSERT_CONNECTIONS);
  return new ClickHouseStore(client, 'embedded', database, opts.logger, readOnly, inserters, () => holder.close());
}

function loadChdb(): typeof import('chdb/connection') {
  return createRequire(import.meta.url)('chdb/connection') as typeof import('chdb/connection');
}

/**
 * Routes @clickhouse/client's own logging (console by default) into pino.
 * Its errors are the failed requests we rethrow classified, so they go to
 * debug: the caller logs the classified error once, with its context.
 */
function clientLog(logger: Logger): NonNullable<ClickHouseClientConfigOptions['log']> {
  const log = logger.child({ component: 'clickhouse-client' });
  class PinoClientLogger implements ClientLogger {
    trace(p: { module: string; message: string }): void {
      log.trace({ module: p.module }, p.message);
    }
    debug(p: { module: string; message: string }): void {
      log.debug({ module: p.module }, p.message);
    }
    info(p: { module: string; message: string }): void {
      log.info({ module: p.module }, p.message);
    }
    warn(p: { module: string; message: string; err?: Error }): void {
      log.warn({ module: p.module, err: p.err?.message }, p.message);
    }
    error(p: { module: string; message: string; err: Error }): void {
      log.debug({ module: p.module, err: p.err }, p.message);
    }
  }
  return { LoggerClass: PinoClientLogger, level: ClickHouseLogLevel.WARN };
}

class ClickHouseStore implements Store {
  readonly kind: 'server' | 'embedded';
  readonly database: string;
  readonly client: ClickHouseClient;
  readonly #log: Logger;
  readonly #readOnly: ReadOnlyRunner;
  /** Tail of the embedded insert queue; see `insertJson`. */
  #insertTail: Promise<unknown> = Promise.resolve();
  /** Embedded only: connections for raw inserts. */
  readonly #inserters: ChdbInserters | null;
  /** Embedded only: closes the connection that configured the engine (or the engine's thread), last. */
  readonly #closeHolder: () => void | Promise<void>;
  /** Writes running now, and the hold that makes new ones wait (see `holdWrites`). */
  #writing = 0;
  #writesDrained: (() => void) | null = null;
  #hold: Promise<void> | null = null;

  constructor(
    client: ClickHouseClient,
    kind: 'server' | 'embedded',
    database: string,
    logger: Logger,
    readOnly: () => ClickHouseClient,
    inserters: ChdbInserters | null,
    closeHolder: () => void | Promise<void> = () => undefined,
  ) {
    this.#inserters = inserters;
    this.#closeHolder = closeHolder;
    this.client = client;
    this.kind = kind;
    this.database = database;
    this.#log = logger.child({ component: 'store', store_kind: kind });
    this.#readOnly = new ReadOnlyRunner(readOnly, kind, database);
  }

  readOnlyQuery(sql: string): Promise<ReadOnlyResult> {
    return this.#readOnly.query(sql);
  }

  /** Runs a write once no hold is in place, counted so that a hold can wait for it. */
  async #write<T>(run: () => Promise<T>): Promise<T> {
    while (this.#hold) await this.#hold;
    this.#writing++;
    try {
      return await run();
    } finally {
      this.#writing--;
      if (this.#writing === 0) this.#writesDrained?.();
    }
  }

  async holdWrites(): Promise<() => void> {
    while (this.#hold) await this.#hold;
    let release!: () => void;
    this.#hold = new Promise<void>((ok) => (release = ok));
    if (this.#writing > 0) await new Promise<void>((ok) => (this.#writesDrained = ok));
    this.#writesDrained = null;
    return () => {
      this.#hold = null;
      release();
    };
  }

  async backupDatabase(dir: string): Promise<void> {
    await this.#backupStatement(`BACKUP DATABASE ${this.database} TO`, dir);
  }

  async restoreDatabase(dir: string, from: string): Promise<void> {
    const source = assertIdentifier(from, 'backed-up database');
    await this.#backupStatement(`RESTORE DATABASE ${source} AS ${this.database} FROM`, dir);
  }

  async #backupStatement(statement: string, dir: string): Promise<void> {
    if (this.kind !== 'embedded')
      throw new HooklogError(
        'CONFIG_INVALID',
        "a ClickHouse server's backups are taken with its own BACKUP statement (docs/operate/backups.md)",
      );
    try {
      // File() takes a literal, not a bound parameter: the path is quoted here as a ClickHouse string.
      const literal = `'${dir.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
      await this.client.command({ query: `${statement} File(${literal})` });
    } catch (err) {
      throw classifyClickHouseError(err);
    }
  }

  command(sql: string, params?: QueryParams): Promise<void> {
    return this.#write(() => this.#command(sql, params));
  }

  async #command(sql: string, params?: QueryParams): Promise<void> {
    try {
      await this.client.command({ query: sql, query_params: params as Record<string, unknown> | undefined });
    } catch (err) {
      throw classifyClickHouseError(err);
    }
  }

  async query<T>(sql: string, params?: QueryParams): Promise<T[]> {
    try {
      const rs = await this.client.query({
        query: sql,
        query_params: params as Record<string, unknown> | undefined,
        format: 'JSONEachRow',
      });
      return await rs.json<T>();
    } catch (err) {
      throw classifyClickHouseError(err);
    }
  }

  insertJson(table: string, rows: readonly object[], opts: { dedupToken?: string } = {}): Promise<void> {
    return this.#write(() => this.#insertJson(table, rows, opts));
  }

  async #insertJson(table: string, rows: readonly object[], opts: { dedupToken?: string }): Promise<void> {
    assertIdentifier(table, 'table');
    if (rows.length === 0) return;
    // The token is always sent, empty when there is none: chdb applies
    // settings as session-wide `SET`s that outlive the statement, so an insert
    // without one would silently reuse the previous insert's token and be
    // dropped as its "duplicate".
    const settings: ClickHouseSettings = { insert_deduplication_token: opts.dedupToken ?? '' };
    const run = async (): Promise<void> => {
      try {
        await this.client.insert({
          table: `${this.database}.${table}`,
          values: rows as object[],
          format: 'JSONEachRow',
          clickhouse_settings: settings,
        });
      } catch (err) {
        throw classifyClickHouseError(err);
      }
    };
    if (this.kind === 'server') return run();
    // Embedded: the `SET token; INSERT` pair must not interleave with another
    // insert's pair on the shared session, so embedded inserts run one at a time.
    const result = this.#insertTail.then(run, run);
    this.#insertTail = result.catch(() => undefined);
    return result;
  }

  insertTsv(table: string, columns: readonly string[], body: Buffer, opts: TsvInsertOptions = {}): Promise<void> {
    return this.#write(() => this.#insertTsv(table, columns, body, opts));
  }

  async #insertTsv(table: string, columns: readonly string[], body: Buffer, opts: TsvInsertOptions): Promise<void> {
    assertIdentifier(table, 'table');
    for (const c of columns) assertIdentifier(c, 'column');
    if (body.length === 0) return;
    const settings = tsvInsertSettings(opts);
    try {
      if (this.#inserters) {
        await this.#inserters.insert({
          table: `${this.database}.${table}`,
          columns,
          format: 'TabSeparated',
          body,
          settings,
        });
        return;
      }
      await this.client.insert({
        table: `${this.database}.${table}`,
        values: Readable.from([body], { objectMode: false }),
        format: 'TabSeparated',
        columns: [...columns] as [string, ...string[]],
        clickhouse_settings: settings,
      });
    } catch (err) {
      throw classifyClickHouseError(err);
    }
  }

  async ping(): Promise<void> {
    let result: Awaited<ReturnType<ClickHouseClient['ping']>>;
    try {
      result = await this.client.ping({ select: true });
    } catch (err) {
      throw classifyClickHouseError(err);
    }
    if (!result.success) throw classifyClickHouseError(result.error);
  }

  async close(): Promise<void> {
    await this.#insertTail;
    try {
      await this.#inserters?.close();
      await this.#readOnly.close();
      await this.client.close();
    } catch (err) {
      this.#log.warn({ err }, 'store_close_failed');
    } finally {
      await this.#closeHolder();
    }
  }
}
