/**
 * Event hook deliveries sent the way the service sends them (one at a time per sender, a 3 s time-out), paced,
 * from before a hooklog listens until told to stop, each attempt kept with what it got: for restart tests and
 * the restart bench, which ask when the first 204 came, whether any came late, and what the starting process
 * answered.
 */
import { request } from 'node:http';
import { delivery } from '../fixtures/index.js';
import { hookEvent } from './instances.js';
import { TEST_SECRET } from './hooklog-config.js';

export interface Attempt {
  /** When it was sent, ms since the load started (performance.now()-based). */
  readonly sentMs: number;
  /** How long until its answer (or its failure). */
  readonly ms: number;
  /** The HTTP status, 'refused' when nothing listened, 'timeout' after 3 s, 'error' for anything else. */
  readonly outcome: number | 'refused' | 'timeout' | 'error';
  readonly retryAfter?: string;
}

export interface HookLoad {
  readonly attempts: readonly Attempt[];
  /** ms since the load started (the clock of `sentMs`). */
  now(): number;
  stop(): Promise<readonly Attempt[]>;
}

const SERVICE_TIMEOUT_MS = 3000;

/**
 * Starts `senders` loops, each POSTing one delivery of one event to `url()`'s hook and, once answered, the next
 * after `gapMs`. `url()` may return undefined (not listening yet): the attempt is then not made.
 */
export function startHookLoad(opts: {
  url: () => string | undefined;
  hookId: string;
  org: string;
  senders?: number;
  gapMs?: number;
}): HookLoad {
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  const attempts: Attempt[] = [];
  let stopped = false;
  let n = 0;
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const sender = async () => {
    while (!stopped) {
      const base = opts.url();
      if (base !== undefined)
        attempts.push(await post(`${base}/hooks/events/${opts.hookId}`, opts.org, opts.hookId, n++, now));
      await pause(opts.gapMs ?? 20);
    }
  };
  const running = Promise.all(Array.from({ length: opts.senders ?? 1 }, sender));
  return {
    attempts,
    now,
    stop: async () => {
      stopped = true;
      await running;
      return attempts;
    },
  };
}

function post(url: string, org: string, hookId: string, i: number, now: () => number): Promise<Attempt> {
  const body = Buffer.from(JSON.stringify(delivery(org, hookId, [hookEvent(i)])));
  const sentMs = now();
  return new Promise((resolve) => {
    const done = (outcome: Attempt['outcome'], retryAfter?: string) =>
      resolve({ sentMs, ms: now() - sentMs, outcome, ...(retryAfter === undefined ? {} : { retryAfter }) });
    // node:http rather than fetch: a refused connection must be told from a time-out, and no pool may hold a
    // connection to a process that is gone.
    const req = request(url, {
      method: 'POST',
      agent: false,
      headers: {
        'content-type': 'application/json',
        authorization: TEST_SECRET,
        'content-length': String(body.length),
        connection: 'close',
      },
      timeout: SERVICE_TIMEOUT_MS,
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0, res.headers['retry-after']));
      res.on('error', () => done('error'));
    });
    req.on('timeout', () => {
      req.destroy();
      done('timeout');
    });
    req.on('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED' ? 'refused' : 'error'));
    req.end(body);
  });
}
