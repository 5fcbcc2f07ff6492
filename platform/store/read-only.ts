import type { ClickHouseClient } from '@clickhouse/client';
import { HooklogError } from '../errors.js';
import { classifyClickHouseError } from './errors.js';

/**
 * Statements that write although the connection is read-only: ClickHouse checks `readonly` for writes to tables
 * and for RESTORE, but not for BACKUP, which writes files (into the embedded engine's backup directory, the one
 * `hooklog backup` stages in). Named by the engine's own parser (the first line of `EXPLAIN AST`), never by
 * matching the text, so comments, case and spacing cannot hide one.
 */
const WRITING_STATEMENTS = /^"?(BackupQuery|RestoreQuery)\b/;

/** Column names in result order, and the rows (JSON format: 64-bit integers as strings). */
export interface ReadOnlyResult {
  readonly columns: string[];
  readonly rows: Array<Record<string, unknown>>;
}

/**
 * Runs people's ad-hoc SQL (`hooklog sql`, the admin socket) so that it can
 * neither write nor change what the store's own connection does, and so that
 * unqualified table names mean hooklog's database.
 *
 * It needs a connection of its own. On a server, settings are per request, so
 * a second client with `database` set and `readonly=2` (no writes, no DDL;
 * `2` rather than `1` so the client's own per-request settings are still
 * accepted) is enough. On chdb, settings are `SET`s that stay on the
 * connection: `readonly=1` on the store's connection would fail every later
 * insert (they set insert_deduplication_token), stalling the sink. So the
 * embedded kind opens a second chdb connection on the same path (the engine
 * allows several), makes *it* read-only once, and runs `USE <db>` before each
 * query (a user's `USE` must not leak into the next one).
 */
export class ReadOnlyRunner {
  readonly #open: () => ClickHouseClient;
  readonly #kind: 'server' | 'embedded';
  readonly #database: string;
  #client: Promise<ClickHouseClient> | null = null;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(open: () => ClickHouseClient, kind: 'server' | 'embedded', database: string) {
    this.#open = open;
    this.#kind = kind;
    this.#database = database;
  }

  query(sql: string): Promise<ReadOnlyResult> {
    const run = async (): Promise<ReadOnlyResult> => {
      try {
        const client = await this.#connect();
        if (this.#kind === 'embedded') await client.command({ query: `USE ${this.#database}` });
        await refuseWritingStatement(client, sql);
        const rs = await client.query({ query: sql, format: 'JSON' });
        const body = (await rs.json()) as { meta?: Array<{ name: string }>; data?: Array<Record<string, unknown>> };
        return { columns: (body.meta ?? []).map((m) => m.name), rows: body.data ?? [] };
      } catch (err) {
        throw classifyClickHouseError(err);
      }
    };
    // Embedded: `USE` then the query must not interleave with another pair.
    const result = this.#tail.then(run, run);
    this.#tail = result.catch(() => undefined);
    return result;
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = null;
    if (!client) return;
    await this.#tail;
    await (await client.catch(() => null))?.close();
  }

  #connect(): Promise<ClickHouseClient> {
    this.#client ??= (async () => {
      const client = this.#open();
      if (this.#kind === 'embedded') {
        try {
          await client.command({ query: 'SET output_format_json_quote_64bit_integers = 1' });
          await client.command({ query: 'SET readonly = 1' });
        } catch (err) {
          await client.close();
          throw err;
        }
      }
      return client;
    })();
    const pending = this.#client;
    pending.catch(() => {
      if (this.#client === pending) this.#client = null; // retry the connection next time
    });
    return pending;
  }
}

async function refuseWritingStatement(client: ClickHouseClient, sql: string): Promise<void> {
  // The client appends `FORMAT <format>` to the text, which EXPLAIN takes as part of the statement it explains; its
  // own output is one line per node, the statement's kind first, in the connection's default form (quoted, on chdb).
  const rs = await client.query({ query: `EXPLAIN AST ${sql}`, format: 'TabSeparated' });
  const first = (await rs.text()).split('\n', 1)[0] ?? '';
  const statement = WRITING_STATEMENTS.exec(first)?.[1];
  if (statement)
    throw new HooklogError(
      'QUERY_INVALID',
      `${statement === 'BackupQuery' ? 'BACKUP' : 'RESTORE'} is refused here: ad-hoc SQL is read-only (use \`hooklog backup\` and \`hooklog restore\`)`,
    );
}
