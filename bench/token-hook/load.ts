/**
 * A bounded, self-stopping, open-loop load generator for 127.0.0.1 only.
 *
 * Open loop: request i is due at start + i/rate whatever happened to earlier
 * ones, and its latency counts from when it was due — so a slow server shows
 * up as latency instead of quietly lowering the offered rate (coordinated
 * omission). Bounded: a fixed number of requests, at most `maxInFlight` at
 * once (past that a request is counted as refused, not queued), a per-request
 * time-out, and a hard deadline after which whatever is left is abandoned.
 */
import { Agent, request } from 'node:http';

export interface LoadOptions {
  readonly port: number;
  readonly path: string;
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  readonly rate: number;
  readonly durationMs: number;
  /** Body length every answer must have (the expected JSON). */
  readonly expectLength: number;
  readonly maxInFlight?: number;
  /** The service's own budget: slower answers count as failed. */
  readonly timeoutMs?: number;
}

export interface LoadResult {
  readonly offered: number;
  readonly ok: number;
  readonly failed: number;
  /** Not sent because maxInFlight requests were already waiting. */
  readonly refused: number;
  readonly elapsedMs: number;
  /** Successful answers per second over the run. */
  readonly throughput: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Every successful request's latency (ms), unsorted: for pooling several loads. */
  readonly latencies: Float64Array;
}

/** The q-quantile (0..1) of sorted values, nearest rank. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const total = Math.max(1, Math.round((opts.rate * opts.durationMs) / 1000));
  const maxInFlight = opts.maxInFlight ?? 1000;
  const timeoutMs = opts.timeoutMs ?? 3000;
  const agent = new Agent({ keepAlive: true, maxSockets: maxInFlight });
  const latencies = new Float64Array(total);
  const headers = { ...opts.headers, 'content-length': String(opts.body.length) };
  const interval = 1000 / opts.rate;
  let ok = 0;
  let failed = 0;
  let refused = 0;
  let inFlight = 0;
  let next = 0;
  const start = performance.now();

  return new Promise((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      agent.destroy();
      const elapsedMs = performance.now() - start;
      const sorted = latencies.slice(0, ok).sort();
      resolve({
        offered: total,
        ok,
        failed: failed + (total - ok - failed - refused),
        refused,
        elapsedMs,
        throughput: (ok * 1000) / elapsedMs,
        p50Ms: quantile(sorted, 0.5),
        p99Ms: quantile(sorted, 0.99),
        maxMs: quantile(sorted, 1),
        latencies: latencies.slice(0, ok),
      });
    };
    const settle = () => {
      if (ok + failed + refused === total) finish();
    };
    const deadline = setTimeout(finish, opts.durationMs + timeoutMs + 2000);

    const fire = (due: number) => {
      if (inFlight >= maxInFlight) {
        refused++;
        return settle();
      }
      inFlight++;
      let done = false;
      const end = (success: boolean) => {
        if (done) return;
        done = true;
        inFlight--;
        if (success) latencies[ok++] = performance.now() - due;
        else failed++;
        settle();
      };
      const req = request(
        { agent, host: '127.0.0.1', port: opts.port, path: opts.path, method: 'POST', headers },
        (res) => {
          let length = 0;
          res.on('data', (chunk: Buffer) => (length += chunk.length));
          res.on('end', () => end(res.statusCode === 200 && length === opts.expectLength));
          res.on('error', () => end(false));
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Error('time-out')));
      req.on('error', () => end(false));
      req.end(opts.body);
    };

    const tick = () => {
      const now = performance.now();
      while (next < total && start + next * interval <= now) fire(start + next++ * interval);
      if (next < total) setTimeout(tick, 1);
    };
    tick();
  });
}
