import { chmodSync, existsSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { HooklogError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import type { ResultSet } from './format.js';

/**
 * The local admin channel: an HTTP server on a Unix socket in the data
 * directory, mode 0600, so only the user running hooklog can reach it and no
 * secret is needed. It exists because embedded ClickHouse takes an exclusive
 * lock on its directory: while `hooklog start` runs, `hooklog sql` asks the
 * running process instead of opening the store itself.
 */
export function adminSocketPath(dataDir: string): string {
  return join(resolve(dataDir), 'hooklog.sock');
}

export type ReadOnlyQuery = (sql: string) => Promise<ResultSet>;
/** Runs a named query of the library (analytics/); its errors carry the wrong parameter's name as `param`. */
export type NamedQueryRunner = (name: string, params: Record<string, string>) => Promise<ResultSet>;

/** `hooklog status` as the running process sees it. */
export type StatusRunner = () => Promise<unknown>;

/** Further routes (POST, JSON in and out), such as `/risk`: the payload is untrusted JSON, checked by the route. */
export type AdminRoutes = Readonly<Record<string, (payload: unknown) => Promise<unknown>>>;

export async function serveAdminSocket(
  dataDir: string,
  runQuery: ReadOnlyQuery,
  logger: Logger,
  runNamed?: NamedQueryRunner,
  runStatus?: StatusRunner,
  routes: AdminRoutes = {},
): Promise<() => Promise<void>> {
  const path = adminSocketPath(dataDir);
  // A socket file left by a killed process would make listen() fail; we hold the data dir's lock by now, so it is
  // stale.
  if (existsSync(path)) rmSync(path);
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    res.setHeader('content-type', 'application/json');
    if (req.method === 'POST' && req.url === '/status' && runStatus) {
      try {
        res.end(JSON.stringify(await runStatus()));
      } catch (err) {
        res.statusCode = 500;
        res.end(JSON.stringify({ error: (err as Error).message }));
      }
      return;
    }
    const route = req.method === 'POST' && req.url !== undefined ? routes[req.url] : undefined;
    if (route && Object.hasOwn(routes, req.url!)) {
      try {
        res.end(JSON.stringify(await route(JSON.parse(Buffer.concat(chunks).toString('utf8')))));
      } catch (err) {
        res.statusCode = 400;
        res.end(JSON.stringify({ error: (err as Error).message }));
      }
      return;
    }
    if (req.method === 'POST' && req.url === '/query' && runNamed) {
      try {
        const { name, params } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          name: string;
          params: Record<string, string>;
        };
        res.end(JSON.stringify(await runNamed(name, params)));
      } catch (err) {
        res.statusCode = 400;
        res.end(JSON.stringify({ error: (err as Error).message, param: (err as { param?: string }).param }));
      }
      return;
    }
    if (req.method !== 'POST' || req.url !== '/sql') {
      res.statusCode = 404;
      res.end(JSON.stringify({ error: 'not found' }));
      return;
    }
    try {
      const { query } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { query: string };
      res.end(JSON.stringify(await runQuery(query)));
    } catch (err) {
      res.statusCode = 400;
      res.end(JSON.stringify({ error: (err as Error).message }));
    }
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(path, () => ok());
  });
  chmodSync(path, 0o600);
  logger.debug({ path }, 'admin socket listening');
  return () => new Promise<void>((ok) => server.close(() => ok()));
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
  toError: (message: string, param: string | undefined) => Error,
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
        };
        if (res.statusCode !== 200) fail(toError(body.error ?? `admin socket answered ${res.statusCode}`, body.param));
        else ok(body);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? ok(undefined) : fail(err),
    );
    req.end(JSON.stringify(payload));
  });
}
