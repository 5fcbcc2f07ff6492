/**
 * Embedded ClickHouse (chdb) on a thread of its own: the thread loads chdb's library and opens the data directory,
 * then runs every statement sent to it, while the main thread only posts messages and reads the answers.
 *
 * Why: loading chdb (a 566 MB native library) and opening its data directory are synchronous native calls, 0.25 to
 * 0.4 s of CPU on an idle machine and more on a busy one. On the main thread they either block the event loop once
 * HTTP listens (hook deliveries answered late, 204s past ack_timeout_ms) or delay listening (a restarted instance's
 * first 204 waits for them; issue 38). On this thread they run beside the main thread's start, and the hook
 * receivers acknowledge without waiting for the store. Statements were asynchronous already (chdb runs them on
 * libuv's pool); only where they are sent from changes.
 *
 * What crosses: SQL, parameters and settings one way, result bytes the other (transferred, not copied: chdb
 * materialises every result anyway, and @clickhouse/client parses it on the main thread as before), and insert
 * bodies as bytes (a string body is encoded once, on the main thread). Errors cross as their fields (message,
 * ClickHouse code and type), which is what `classifyClickHouseError` reads.
 *
 * chdb should not be loaded on the main thread as well while this thread owns it. It loads and answers there too
 * (tried: both threads on one path, plain and parameterised statements), but chdb runs parameterised statements
 * one at a time through a chain its comments say must be one per process (two at once on different connections
 * clobber each other's parameters and can abort the engine), and that chain, like its count of running statements,
 * is per JavaScript context. `openStore({ thread: true })` is used by `hooklog start` only; the one-shot commands and
 * the tests open the engine in-thread (store.ts).
 */
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { HooklogError } from '../errors.js';
import type { Logger } from '../log.js';
import type { RawInsertConnection } from './chdb-inserts.js';

/** An error as it crosses the thread boundary: the fields the classifiers read (structured clone drops them). */
interface WireError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly type?: string;
  readonly clickhouseCode?: number;
}

/** A ClickHouse failure raised on the engine's thread, with its code and type as @clickhouse/client's errors. */
class ChdbThreadError extends Error {
  readonly code?: string;
  readonly type?: string;
  readonly clickhouseCode?: number;
  constructor(w: WireError) {
    super(w.message);
    this.name = w.name;
    if (w.code !== undefined) this.code = w.code;
    if (w.type !== undefined) this.type = w.type;
    if (w.clickhouseCode !== undefined) this.clickhouseCode = w.clickhouseCode;
  }
}

/** The statement fields forwarded to the thread's connection; the client's others (abort signal, auth) do not apply. */
interface ForwardedParams {
  readonly query: string;
  readonly query_params?: Record<string, unknown>;
  readonly clickhouse_settings?: Record<string, unknown>;
  readonly query_id?: string;
}

type Request =
  | { readonly op: 'open'; readonly conn: number }
  | { readonly op: 'query' | 'command'; readonly conn: number; readonly params: ForwardedParams }
  | {
      readonly op: 'insert' | 'exec';
      readonly conn: number;
      readonly params: ForwardedParams;
      readonly body?: Uint8Array;
    }
  | { readonly op: 'ping'; readonly conn: number }
  | { readonly op: 'rawInsert'; readonly conn: number; readonly insert: RawInsertMessage }
  | { readonly op: 'closeConn'; readonly conn: number }
  | { readonly op: 'close' };

interface RawInsertMessage {
  readonly table: string;
  readonly columns: readonly string[];
  readonly format: string;
  readonly body: Uint8Array;
  readonly settings: Readonly<Record<string, string | number>>;
}

/** What the thread answers: a result (`body` transferred), or the error. */
interface Reply {
  readonly id: number;
  readonly error?: WireError;
  readonly body?: Uint8Array;
  readonly query_id?: string;
  readonly summary?: Record<string, string>;
  readonly ping?: { readonly success: boolean; readonly error?: WireError };
}

type Event =
  | { readonly kind: 'opened'; readonly loadMs: number; readonly openMs: number }
  | { readonly kind: 'failed'; readonly error: WireError };

/**
 * The engine's thread, as a script (CommonJS, plain JavaScript): it is the same text under tsx, vitest and the
 * bundled CLI (dist/hooklog.js has no file of its own for a worker to load). It requires chdb by the absolute paths
 * the main thread resolved, opens the holder session first (the engine takes its configuration from the first
 * connection to the directory: --backups.allowed_path), then answers requests, each on the connection it names.
 */
const THREAD_SCRIPT = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
function wire(e) {
  const o = e && typeof e === 'object' ? e : { message: String(e) };
  const w = { name: String(o.name || 'Error'), message: String(o.message != null ? o.message : o) };
  if (typeof o.code === 'string') w.code = o.code;
  if (typeof o.type === 'string') w.type = o.type;
  if (typeof o.clickhouseCode === 'number') w.clickhouseCode = o.clickhouseCode;
  return w;
}
// A buffer of its own to transfer: a Buffer may be a view on a shared pool, which must not be detached.
function own(buf) {
  if (buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength) return new Uint8Array(buf.buffer);
  return new Uint8Array(buf);
}
// Transferred when the buffer can be (chdb's result buffers are the engine's own), else copied.
function answer(reply) {
  try {
    parentPort.postMessage(reply, reply.body ? [reply.body.buffer] : []);
  } catch (e) {
    parentPort.postMessage(reply);
  }
}
async function collect(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : c);
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}
// chdb's native addon, loaded here with RTLD_NODELETE and handed to chdb's loader through the require cache. Node
// unloads (dlclose) the addons a worker loaded when the worker ends; libchdb registers thread-specific data with
// destructors on every thread that calls into it, and those run as the thread exits, after the unload: into
// unmapped code (SIGSEGV at the thread's, so the process's, exit, whatever was closed before). Kept mapped, they
// run as on any other thread. The addon's place is chdb's own choice (dist/loader.js: @chdb/lib-<platform>).
function pinAddon() {
  const Module = require('node:module');
  const { realpathSync } = require('node:fs');
  const { dirname, join } = require('node:path');
  const pkg = workerData.addonPackage;
  if (!pkg) return; // a platform chdb has no build for: its loader says so
  const file = realpathSync(join(dirname(Module.createRequire(workerData.chdb).resolve(pkg)), 'chdb_node.node'));
  const mod = new Module(file, null);
  mod.filename = file;
  process.dlopen(mod, file, require('node:os').constants.dlopen.RTLD_NOW | workerData.rtldNodelete);
  mod.loaded = true;
  Module._cache[file] = mod;
}
let chdb = null;
let createChdbConnection = null;
let holder = null;
let failure = null;
const started = performance.now();
try {
  pinAddon();
  chdb = require(workerData.chdb);
  const loaded = performance.now();
  createChdbConnection = require(workerData.connection).createChdbConnection;
  holder = new chdb.Session(workerData.path, { connectionArgs: workerData.connectionArgs });
  parentPort.postMessage({ event: { kind: 'opened', loadMs: loaded - started, openMs: performance.now() - loaded } });
} catch (e) {
  failure = wire(e);
  parentPort.postMessage({ event: { kind: 'failed', error: failure } });
}
const conns = new Map();
function conn(id) {
  const c = conns.get(id);
  if (!c) throw new Error('chdb thread: no connection ' + id);
  return c;
}
async function run(m) {
  switch (m.op) {
    case 'open':
      conns.set(m.conn, createChdbConnection({ path: workerData.path }));
      return {};
    case 'query': {
      const r = await conn(m.conn).query(m.params);
      return { body: own(await collect(r.stream)), query_id: r.query_id };
    }
    case 'exec': {
      const params = m.body ? { ...m.params, values: Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength).toString('utf8') } : m.params;
      const r = await conn(m.conn).exec(params);
      return { body: own(await collect(r.stream)), query_id: r.query_id, summary: r.summary };
    }
    case 'command': {
      const r = await conn(m.conn).command(m.params);
      return { query_id: r.query_id, summary: r.summary };
    }
    case 'insert': {
      const values = Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength).toString('utf8');
      const r = await conn(m.conn).insert({ ...m.params, values });
      return { query_id: r.query_id, summary: r.summary };
    }
    case 'ping': {
      const r = await conn(m.conn).ping({ select: true });
      return { ping: r.success ? { success: true } : { success: false, error: wire(r.error) } };
    }
    case 'rawInsert': {
      const i = m.insert;
      await conn(m.conn).chdb.rawInsert({
        table: i.table,
        columns: i.columns,
        format: i.format,
        values: Buffer.from(i.body.buffer, i.body.byteOffset, i.body.byteLength),
        settings: i.settings,
      });
      return {};
    }
    case 'closeConn': {
      const c = conns.get(m.conn);
      conns.delete(m.conn);
      if (c) await c.close();
      return {};
    }
    case 'close': {
      for (const [id, c] of conns) {
        conns.delete(id);
        await c.close().catch(() => undefined);
      }
      if (holder) holder.close();
      holder = null;
      // A connection closed while a statement runs on it is released once that statement ends: wait for it.
      if (chdb) await chdb.drainPending();
      return {};
    }
  }
  throw new Error('chdb thread: unknown request ' + m.op);
}
parentPort.on('message', (m) => {
  const done = failure && m.op !== 'close' ? Promise.reject(failure) : run(m);
  done.then(
    (r) => answer({ id: m.id, ...r }),
    (e) => answer({ id: m.id, error: e === failure ? failure : wire(e) }),
  );
});
`;

/** chdb's native addon package per platform, as chdb's own loader (chdb/dist/loader.js) picks it. */
const ADDON_PACKAGES: Readonly<Record<string, string>> = {
  'darwin-arm64': '@chdb/lib-darwin-arm64',
  'darwin-x64': '@chdb/lib-darwin-x64',
  'linux-x64': '@chdb/lib-linux-x64-gnu',
  'linux-arm64': '@chdb/lib-linux-arm64-gnu',
};

/**
 * The thread's stack, in MiB. Node gives a worker 4 MiB by default, the main thread has the system's 8 MiB: the
 * engine opens its data directory (loading each table's metadata, parsing its statements) on the calling thread,
 * and gets no less than it would on the main thread.
 */
const THREAD_STACK_MB = 8;

interface ChdbThreadOptions {
  /** The engine's data directory (`<data_dir>/clickhouse`). */
  readonly path: string;
  /** Engine arguments of the first connection (server configuration, such as --backups.allowed_path). */
  readonly connectionArgs: readonly string[];
  readonly logger: Logger;
}

/** The engine's thread, seen from the main thread. */
export class ChdbThread {
  readonly #worker: Worker;
  readonly #log: Logger;
  readonly #pending = new Map<number, { resolve(r: Reply): void; reject(e: Error): void }>();
  #next = 0;
  #connections = 0;
  /** Set once the thread has stopped: every later request fails with it. */
  #stopped: Error | null = null;
  #closing: Promise<void> | null = null;

  constructor(opts: ChdbThreadOptions) {
    this.#log = opts.logger.child({ component: 'store-thread' });
    const require = createRequire(import.meta.url);
    this.#worker = new Worker(THREAD_SCRIPT, {
      eval: true,
      name: 'hooklog-chdb',
      workerData: {
        chdb: require.resolve('chdb'),
        addonPackage: ADDON_PACKAGES[`${process.platform}-${process.arch}`],
        // dlfcn.h's RTLD_NODELETE (os.constants.dlopen lacks it): glibc's, and macOS's.
        rtldNodelete: process.platform === 'darwin' ? 0x80 : 0x1000,
        connection: require.resolve('chdb/connection'),
        path: opts.path,
        connectionArgs: [...opts.connectionArgs],
      },
      resourceLimits: { stackSizeMb: THREAD_STACK_MB },
    });
    // The thread keeps the process alive only while a request waits for it (#ref).
    this.#worker.unref();
    this.#worker.on('message', (m: { id?: number; event?: Event } & Reply) => {
      if (m.event) {
        // Logged when the main thread hears of it: the order of the log's lines is the order things happened in
        // for the loop (test/e2e/restart.test.ts reads it). A failure to open reaches every statement as well.
        if (m.event.kind === 'opened')
          this.#log.info(
            { path: opts.path, load_ms: Math.round(m.event.loadMs), open_ms: Math.round(m.event.openMs) },
            'embedded ClickHouse opened',
          );
        else this.#log.error({ path: opts.path, err: m.event.error.message }, 'embedded ClickHouse could not open');
        return;
      }
      const waiting = this.#pending.get(m.id!);
      if (!waiting) return;
      this.#pending.delete(m.id!);
      this.#ref();
      if (m.error) waiting.reject(new ChdbThreadError(m.error));
      else waiting.resolve(m);
    });
    this.#worker.on('error', (err) => this.#stop(err));
    this.#worker.on('exit', (code) => this.#stop(new Error(`the embedded ClickHouse thread exited (code ${code})`)));
  }

  /** A connection of its own on the thread, in @clickhouse/client's Connection shape (createClient's `connection`). */
  connection(): ThreadConnection {
    const id = ++this.#connections;
    void this.#call({ op: 'open', conn: id }).catch(() => undefined);
    return new ThreadConnection((r) => this.#call(r), id);
  }

  /** A connection for raw inserts (ChdbInserters): the body is copied once, into a buffer the thread takes over. */
  rawConnection(): RawInsertConnection {
    const conn = this.connection();
    return {
      chdb: {
        rawInsert: async (i) => {
          const body = new Uint8Array(i.values);
          await this.#call(
            {
              op: 'rawInsert',
              conn: conn.id,
              insert: { table: i.table, columns: [...i.columns], format: i.format, body, settings: { ...i.settings } },
            },
            [body.buffer],
          );
        },
      },
      close: () => conn.close(),
    };
  }

  /** Closes every connection and the engine on the thread, then ends the thread. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        if (!this.#stopped) await this.#call({ op: 'close' });
      } catch (err) {
        this.#log.warn({ err }, 'embedded ClickHouse did not close cleanly');
      }
      this.#stopped ??= new HooklogError('STORE_QUERY_FAILED', 'store is closed');
      await this.#worker.terminate();
    })();
    return this.#closing;
  }

  #call(request: Request, transfer: ArrayBuffer[] = []): Promise<Reply> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    const id = ++this.#next;
    const reply = new Promise<Reply>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    this.#ref();
    this.#worker.postMessage({ ...request, id }, transfer);
    return reply;
  }

  /** Referenced while a request waits, so that a caller's `await` keeps the process alive; not otherwise. */
  #ref(): void {
    if (this.#pending.size > 0) this.#worker.ref();
    else this.#worker.unref();
  }

  #stop(err: Error): void {
    if (!this.#stopped) {
      if (!this.#closing) this.#log.error({ err }, 'the embedded ClickHouse thread stopped');
      this.#stopped = new HooklogError('STORE_QUERY_FAILED', `embedded ClickHouse is not running: ${err.message}`, {
        cause: err,
      });
    }
    for (const [id, waiting] of this.#pending) {
      this.#pending.delete(id);
      waiting.reject(this.#stopped);
    }
    this.#ref();
  }
}

type Call = (r: Request, transfer?: ArrayBuffer[]) => Promise<Reply>;

/** The client's statement parameters this store passes on (the rest is HTTP's). */
interface ConnParams {
  readonly query: string;
  readonly query_params?: Record<string, unknown>;
  readonly clickhouse_settings?: Record<string, unknown>;
  readonly query_id?: string;
}

/**
 * @clickhouse/client's Connection over a connection on the engine's thread: the same answers as chdb's own
 * ChdbConnection gives (it runs there), results as one-chunk streams.
 */
class ThreadConnection {
  readonly #call: Call;
  readonly id: number;
  #closed = false;

  constructor(call: Call, id: number) {
    this.#call = call;
    this.id = id;
  }

  async query(p: ConnParams) {
    const r = await this.#call({ op: 'query', conn: this.id, params: forwarded(p) });
    return { stream: readable(r.body), query_id: r.query_id ?? '', response_headers: {}, http_status_code: 200 };
  }

  async exec(p: ConnParams & { readonly values?: Readable }) {
    const body = p.values === undefined ? undefined : await bytesOf(p.values);
    const r = await this.#call(
      { op: 'exec', conn: this.id, params: forwarded(p), ...(body ? { body } : {}) },
      body ? [body.buffer as ArrayBuffer] : [],
    );
    return {
      stream: readable(r.body),
      query_id: r.query_id ?? '',
      response_headers: {},
      http_status_code: 200,
      summary: r.summary,
    };
  }

  async command(p: ConnParams) {
    const r = await this.#call({ op: 'command', conn: this.id, params: forwarded(p) });
    return { query_id: r.query_id ?? '', response_headers: {}, http_status_code: 200, summary: r.summary };
  }

  async insert(p: ConnParams & { readonly values: string | Readable }) {
    const body = await bytesOf(p.values);
    const r = await this.#call({ op: 'insert', conn: this.id, params: forwarded(p), body }, [
      body.buffer as ArrayBuffer,
    ]);
    return { query_id: r.query_id ?? '', response_headers: {}, http_status_code: 200, summary: r.summary };
  }

  async ping(): Promise<{ success: true } | { success: false; error: Error }> {
    try {
      const r = await this.#call({ op: 'ping', conn: this.id });
      if (r.ping?.success) return { success: true };
      return { success: false, error: new ChdbThreadError(r.ping?.error ?? { name: 'Error', message: 'ping failed' }) };
    } catch (err) {
      return { success: false, error: err instanceof Error ? err : new Error(String(err)) };
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // A thread already closed (or stopped) closed this connection with it.
    await this.#call({ op: 'closeConn', conn: this.id }).catch(() => undefined);
  }
}

function forwarded(p: ConnParams): ForwardedParams {
  return {
    query: p.query,
    ...(p.query_params ? { query_params: p.query_params } : {}),
    ...(p.clickhouse_settings ? { clickhouse_settings: p.clickhouse_settings } : {}),
    ...(p.query_id ? { query_id: p.query_id } : {}),
  };
}

/** A result as the client reads it: one chunk, then the end (as chdb's own connection gives it). */
function readable(body: Uint8Array | undefined): Readable {
  const buf = body ? Buffer.from(body.buffer, body.byteOffset, body.byteLength) : Buffer.alloc(0);
  const r = new Readable({
    read() {
      this.push(buf);
      this.push(null);
    },
  });
  // The client destroys an unread result with an error when it is closed; nothing else can fail here.
  r.on('error', () => undefined);
  return r;
}

/** An insert body as bytes in a buffer of their own (transferred to the thread, so never a view on a shared pool). */
async function bytesOf(values: string | Readable): Promise<Uint8Array> {
  if (typeof values === 'string') {
    const b = Buffer.from(values, 'utf8');
    // A small Buffer is a view on Node's shared pool: copied into one of its own (a transfer would detach the pool).
    return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? new Uint8Array(b.buffer) : new Uint8Array(b);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of values as AsyncIterable<unknown>) {
    const b = typeof c === 'string' ? Buffer.from(c, 'utf8') : Buffer.from(c as Uint8Array);
    chunks.push(b);
    size += b.length;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const b of chunks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
