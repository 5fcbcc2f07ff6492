import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyTooLarge, readBody } from './body.js';

/**
 * readBody over a real node:http server: what each request's read gave (bytes or error), and the request's
 * listeners during and after the read.
 */
interface Seen {
  readonly body?: Buffer;
  readonly err?: unknown;
  readonly during: { data: readonly unknown[]; end: readonly unknown[]; error: number; close: number };
  readonly after: { data: number; end: number; error: number; close: number };
  readonly before: { error: number; close: number };
}

const LIMIT = 64;
let server: Server;
let port: number;
const seen: Seen[] = [];
let waiters: Array<() => void> = [];
/** Requests whose handler has started reading. */
let started = 0;

const counts = (req: IncomingMessage) => ({
  data: req.listenerCount('data'),
  end: req.listenerCount('end'),
  error: req.listenerCount('error'),
  close: req.listenerCount('close'),
});

beforeAll(async () => {
  server = createServer((req, res) => {
    const before = { error: req.listenerCount('error'), close: req.listenerCount('close') };
    const reading = readBody(req, LIMIT);
    started++;
    const during = {
      data: req.listeners('data'),
      end: req.listeners('end'),
      error: req.listenerCount('error'),
      close: req.listenerCount('close'),
    };
    const record = (r: { body?: Buffer; err?: unknown }) => {
      seen.push({ ...r, during, after: counts(req), before });
      for (const w of waiters) w();
      waiters = [];
      if (!res.destroyed) res.end(r.body ?? 'refused');
    };
    reading.then(
      (body) => record({ body }),
      (err: unknown) => record({ err }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Waits (bounded) until the server has recorded `n` reads, saying how many it saw if not. */
async function reads(n: number): Promise<Seen[]> {
  const deadline = Date.now() + 5000;
  while (seen.length < n) {
    if (Date.now() > deadline) throw new Error(`expected ${n} body reads, the server recorded ${seen.length}`);
    await new Promise<void>((resolve) => {
      waiters.push(resolve);
      setTimeout(resolve, 100).unref();
    });
  }
  return seen.slice(n - 1, n);
}

/** Sends `chunks` as a chunked body (no Content-Length), one write each; resolves with the answer's status. */
function postChunked(chunks: readonly string[], headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

describe('readBody', () => {
  it('gives the bytes as sent across chunks, and leaves no listener of its own behind', async () => {
    const n = seen.length + 1;
    await postChunked(['{"a":', '"é",', '"b":[1,2]}']);
    const [r] = await reads(n);
    expect(r!.err).toBeUndefined();
    expect(r!.body!.toString('utf8')).toBe('{"a":"é","b":[1,2]}');
    expect(r!.after).toEqual({ data: 0, end: 0, error: r!.before.error, close: r!.before.close });
  });

  it('refuses a streamed body past the limit with BodyTooLarge, having read no more than one chunk past it', async () => {
    const n = seen.length + 1;
    await postChunked(['x'.repeat(40), 'y'.repeat(40), 'z'.repeat(40)]);
    const [r] = await reads(n);
    expect(r!.err).toBeInstanceOf(BodyTooLarge);
    const err = r!.err as BodyTooLarge;
    expect(err.declaredBytes).toBeUndefined();
    expect(err.limitBytes).toBe(LIMIT);
    expect(err.receivedBytes).toBeGreaterThan(LIMIT);
    expect(r!.after).toEqual({ data: 0, end: 0, error: r!.before.error, close: r!.before.close });
  });

  it('refuses a declared length past the limit before reading', async () => {
    const n = seen.length + 1;
    const big = 'q'.repeat(LIMIT + 1);
    await postChunked([big], { 'content-length': String(big.length) });
    const [r] = await reads(n);
    expect(r!.err).toBeInstanceOf(BodyTooLarge);
    expect((r!.err as BodyTooLarge).declaredBytes).toBe(LIMIT + 1);
    expect((r!.err as BodyTooLarge).receivedBytes).toBe(0);
  });

  it('rejects when the client goes away before the body ended', async () => {
    const n = seen.length + 1;
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'content-length': '50' } });
    req.on('error', () => undefined);
    req.write('{"partial":');
    req.flushHeaders();
    // Poll until the server is reading this body, then abort mid-body.
    const deadline = Date.now() + 5000;
    while (started < n) {
      if (Date.now() > deadline) throw new Error(`the server started ${started} reads, expected ${n}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    req.destroy();
    const [r] = await reads(n);
    // node reports the abort as the request's error ('aborted'); a close without one gets readBody's own message.
    expect(r!.err).toBeInstanceOf(Error);
    expect(r!.err).not.toBeInstanceOf(BodyTooLarge);
    expect(['aborted', 'request closed before its body ended']).toContain((r!.err as Error).message);
    expect(r!.after).toEqual({ data: 0, end: 0, error: r!.before.error, close: r!.before.close });
  });

  it('allocates no listener per read: every read attaches the very same four functions', async () => {
    const n = seen.length + 1;
    await postChunked(['{}']);
    await postChunked(['[]']);
    const [a] = await reads(n);
    const [b] = await reads(n + 1);
    expect(a!.during.data).toHaveLength(1);
    expect(a!.during.end).toHaveLength(1);
    expect(a!.during.error).toBe(a!.before.error + 1);
    expect(a!.during.close).toBe(a!.before.close + 1);
    // Closures made per read would differ from one request to the next.
    expect(b!.during.data[0]).toBe(a!.during.data[0]);
    expect(b!.during.end[0]).toBe(a!.during.end[0]);
  });
});
