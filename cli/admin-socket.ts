import { chmodSync, existsSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { adminSocketPath } from '../platform/data-dir.js';
import { ErrorCodes, HooklogError, type ErrorCode } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import type { ResultSet } from './format.js';

/**
 * The local admin channel: an HTTP server on a Unix socket in the data
 * directory, mode 0600, so only the user running hooklog can reach it and no
 * secret is needed. It exists because embedded ClickHouse takes an exclusive
 * lock on its directory: while `hooklog start` runs, `hooklog sql`, `query`,
 * `search`, `status`, `coverage`, `rules test` and `hunt` ask the running process
 * instead of opening the store themselves (routes in cli/start.ts).
 */
export { adminSocketPath };

/**
 * What the running process answers: route → handler of the request's JSON
 * body. A handler's error becomes a 400 carrying its message, its code (when a
 * HooklogError) and the parameter it names, for the command to rebuild.
 * Commands that need the embedded store add their route here (cli/start.ts).
 */
export type AdminRoutes = Readonly<Record<string, (body: unknown) => Promise<unknown>>>;

export async function serveAdminSocket(
  dataDir: string,
  logger: Logger,
  routes: AdminRoutes,
): Promise<() => Promise<void>> {
  const path = adminSocketPath(dataDir);
  // A socket file left by a killed process would make listen() fail; we hold the data dir's lock by now, so it is
  // stale.
  if (existsSync(path)) rmSync(path);
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    res.setHeader('content-type', 'application/json');
    const handler = req.method === 'POST' ? routes[req.url ?? ''] : undefined;
    if (!handler) {
      res.statusCode = 404;
      res.end(JSON.stringify({ error: 'not found' }));
      return;
    }
    try {
      const body = chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : {};
      res.end(JSON.stringify(await handler(body)));
    } catch (err) {
      res.statusCode = 400;
      res.end(
        JSON.stringify({
          error: (err as Error).message,
          code: err instanceof HooklogError ? err.code : undefined,
          param: (err as { param?: string }).param,
        }),
      );
    }
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(path, () => ok());
  });
  chmodSync(path, 0o600);
  logger.debug({ path, routes: Object.keys(routes) }, 'admin socket listening');
  return () => new Promise<void>((ok) => server.close(() => ok()));
}

/**
 * Asks the running hooklog's `route`; `undefined` when none is listening. A
 * refusal is rebuilt as the HooklogError it was (its code and message).
 */
export function viaAdminSocket<T>(dataDir: string, route: string, body: object): Promise<T | undefined> {
  return postToAdminSocket(dataDir, route, body, (message, _param, code) =>
    code !== undefined && (ErrorCodes as readonly string[]).includes(code)
      ? new HooklogError(code as ErrorCode, message)
      : new HooklogError('INTERNAL', message),
  ) as Promise<T | undefined>;
}

/** Sends a query to a running hooklog; `undefined` when none is listening. */
export async function queryViaAdminSocket(dataDir: string, sql: string): Promise<ResultSet | undefined> {
  return postToAdminSocket(dataDir, '/sql', { query: sql }, (error) => new HooklogError('STORE_QUERY_FAILED', error));
}

/**
 * Runs a named query in a running hooklog; `undefined` when none is listening. `toError` builds the error from its
 * answer.
 */
export async function namedQueryViaAdminSocket(
  dataDir: string,
  name: string,
  params: Record<string, string>,
  toError: (message: string, param: string | undefined) => Error,
): Promise<ResultSet | undefined> {
  return postToAdminSocket(dataDir, '/query', { name, params }, toError);
}

/** The running process's `hooklog status` lines; `undefined` when none is listening. */
export async function statusViaAdminSocket<T>(dataDir: string): Promise<T | undefined> {
  return postToAdminSocket(dataDir, '/status', {}, (error) => new HooklogError('INTERNAL', error)) as Promise<
    T | undefined
  >;
}

/** POSTs `payload` to a running hooklog's admin route `path`; `undefined` when none is listening. */
export async function postToAdminSocket(
  dataDir: string,
  path: string,
  payload: object,
  toError: (message: string, param: string | undefined, code: string | undefined) => Error,
): Promise<ResultSet | undefined> {
  const socketPath = adminSocketPath(dataDir);
  if (!existsSync(socketPath)) return undefined;
  return new Promise((ok, fail) => {
    const req = request(
      { socketPath, path, method: 'POST', headers: { 'content-type': 'application/json' } },
      async (res) => {
        const chunks: Buffer[] = [];
        for await (const c of res) chunks.push(c as Buffer);
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ResultSet & {
          error?: string;
          param?: string;
          code?: string;
        };
        if (res.statusCode !== 200)
          fail(toError(body.error ?? `admin socket answered ${res.statusCode}`, body.param, body.code));
        else ok(body);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? ok(undefined) : fail(err),
    );
    req.end(JSON.stringify(payload));
  });
}
