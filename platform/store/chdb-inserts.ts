/**
 * Inserts of ready-made bytes into embedded ClickHouse (chdb), several at once.
 *
 * Why not the client's `insert`: through @clickhouse/client, chdb turns the body into a string, prepends
 * the statement and applies settings as session-wide `SET`s, so inserts on the shared session had to run
 * one at a time (a token SET for one would be used by another). chdb's raw insert hands the bytes to the
 * engine as they are and puts the settings in the statement itself (`INSERT … SETTINGS … FORMAT …`), so
 * nothing outlives the call; and each connection runs one statement at a time, so a few connections on
 * the same data directory let inserts of different partitions use different cores, as a server would.
 */

/** A ClickHouse failure in the shape classifyClickHouseError reads (code and type, as @clickhouse/client's). */
class ChdbInsertFailure extends Error {
  readonly code: string;
  readonly type: string;
  constructor(message: string, code: number, type: string, cause: unknown) {
    super(message, { cause });
    this.code = String(code);
    this.type = type;
  }
}

/** chdb's insert errors carry the code as a number and the type only in the message `… (TYPE_NAME) …`. */
function asClickHouseFailure(err: unknown): unknown {
  const e = err as { clickhouseCode?: unknown; message?: unknown };
  if (typeof e?.clickhouseCode !== 'number' || typeof e.message !== 'string') return err;
  const type = /\(([A-Z][A-Z0-9_]+)\)/.exec(e.message)?.[1] ?? 'UNKNOWN';
  // The engine repeats the code prefix once per layer it passed through; keep one.
  const message = e.message.replace(/^(Code: \d+\. DB::Exception: )+/, '$1');
  return new ChdbInsertFailure(message, e.clickhouseCode, type, err);
}

export interface RawInsert {
  /** Database-qualified table. */
  readonly table: string;
  readonly columns: readonly string[];
  readonly format: 'TabSeparated';
  readonly body: Buffer;
  /** Settings of this statement only. */
  readonly settings: Readonly<Record<string, string | number>>;
}

/**
 * What an insert needs of a connection: chdb's own ChdbConnection (`chdb/connection`), or one on the engine's thread
 * (chdb-thread.ts).
 */
export interface RawInsertConnection {
  readonly chdb: {
    rawInsert(i: {
      table: string;
      columns: string[];
      format: RawInsert['format'];
      values: Buffer;
      settings: Record<string, string | number>;
    }): Promise<unknown>;
  };
  close(): Promise<void>;
}

export class ChdbInserters {
  readonly #create: () => RawInsertConnection;
  readonly #size: number;
  #connections: Array<{ readonly conn: RawInsertConnection; busy: number }> = [];
  readonly #running = new Set<Promise<unknown>>();
  #closed = false;

  constructor(create: () => RawInsertConnection, size: number) {
    this.#create = create;
    this.#size = size;
  }

  /** Runs one insert on the least busy connection (opened on first use). */
  async insert(i: RawInsert): Promise<void> {
    if (this.#closed) throw new Error('store is closed');
    if (this.#connections.length < this.#size && this.#connections.every((c) => c.busy > 0))
      this.#connections.push({ conn: this.#create(), busy: 0 });
    const slot = this.#connections.reduce((a, b) => (b.busy < a.busy ? b : a));
    slot.busy++;
    const run = slot.conn.chdb.rawInsert({
      table: i.table,
      columns: [...i.columns],
      format: i.format,
      values: i.body,
      settings: { ...i.settings },
    });
    this.#running.add(run);
    try {
      await run;
    } catch (err) {
      throw asClickHouseFailure(err);
    } finally {
      slot.busy--;
      this.#running.delete(run);
    }
  }

  /** Waits for running inserts (a connection closed under one would abort the engine), then closes. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#running]);
    await Promise.all(this.#connections.map((c) => c.conn.close()));
    this.#connections = [];
  }
}
