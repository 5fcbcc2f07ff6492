/**
 * The measurements of the pollers bench, each against a simulated org served
 * over real HTTP in this process:
 * - `bareLoop`: the baseline — fetch, read, JSON.parse, follow the next link;
 *   nothing else (no validation, no storage).
 * - `hooklogCatchUp`: hooklog's System Log poller (client, budget, checks,
 *   atomic appends of events + cursor to the embedded stream, fsync) over
 *   the same pages, until every event is stored.
 * - `budgetUse`: with rate limits on and a backlog that never runs out, the
 *   share of the allowed requests per window hooklog actually made.
 * Each fails, naming what stalled, instead of waiting for ever: a request of
 * the bare loop without a complete reply in REQUEST_TIMEOUT_MS, the poller
 * with no new event stored for STALL_MS.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findLink } from '../../platform/identity/link.js';
import { startIngest } from '../../ingest/index.js';
import { RateBudget } from '../../platform/identity/rate-limit.js';
import { SYSTEM_LOG_PAGE_LIMIT, systemLogFirstUrl } from '../../ingest/system-log/first-request.js';
import { parseConfig } from '../../cli/config/load.js';
import { createLogger } from '../../platform/log.js';
import { topicNames } from '../../platform/stream/headers.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { history, SimulatedOrg } from '../../test/simulated-org/index.js';

/** A page of the simulated org takes milliseconds; this long without a whole reply is a stall. */
const REQUEST_TIMEOUT_MS = 30_000;
/** The poller stores a page every few ms when catching up; this long without a new event is a stall. */
const STALL_MS = 30_000;

export async function seededOrg(
  events: number,
  rateLimit: { limit: number; windowMs: number } | false,
): Promise<SimulatedOrg> {
  const sim = await SimulatedOrg.start({ rateLimit: { logs: rateLimit } });
  sim.addLogEvents(history({ count: events, days: 30, now: Date.now(), kind: 'log' }));
  return sim;
}

/** Events per second of the bare loop over every page of `sim`. */
export async function bareLoop(sim: SimulatedOrg, events: number): Promise<number> {
  const started = performance.now();
  let url: string | null = systemLogFirstUrl(sim.url, { startMs: Date.now() - 31 * 86_400_000, now: Date.now() });
  let seen = 0;
  for (let pageNo = 1; ; pageNo++) {
    const what = `bare loop: page ${pageNo} (${seen} of ${events} events read so far)`;
    if (url === null) throw new Error(`${what}: the previous page had no next link`);
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        headers: { authorization: 'SSWS sim-token', accept: 'application/json' },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      text = await res.text();
    } catch (err) {
      throw new Error(`${what}: no complete reply within ${REQUEST_TIMEOUT_MS / 1000} s (${String(err)})`, {
        cause: err,
      });
    }
    if (res.status !== 200) throw new Error(`${what}: answered ${res.status}: ${text.slice(0, 200)}`);
    const page = JSON.parse(text) as unknown;
    if (!Array.isArray(page)) throw new Error(`${what}: the reply is not a JSON array`);
    seen += page.length;
    url = findLink(res.headers.get('link'), 'next');
    if (page.length < SYSTEM_LOG_PAGE_LIMIT) break;
  }
  if (seen !== events) throw new Error(`bare loop saw ${seen} of ${events} events`);
  return events / ((performance.now() - started) / 1000);
}

async function withIngest<T>(
  sim: SimulatedOrg,
  section: Record<string, unknown>,
  body: (handle: { events: () => number; startedAt: number; startupMs: number; describe: () => string }) => Promise<T>,
): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'hooklog-bench-poll-'));
  const stream = await openEmbeddedStream({ dataDir: dir });
  const topics = topicNames('bench');
  await stream.ensureTopics([
    { name: topics.logs, partitions: 4 },
    { name: topics.legacyEvents, partitions: 1 },
    { name: topics.deadletter, partitions: 1 },
    { name: topics.cursors, partitions: 1, compacted: true },
  ]);
  const org = parseConfig(
    {
      orgs: [
        {
          id: 'bench',
          base_url: sim.url,
          auth: { ssws: { token: 'sim-token' } },
          system_log: { start: '31d', ...section },
        },
      ],
    },
    {},
  ).orgs[0]!;
  const begun = performance.now();
  // Warnings and errors (a blocked poller, append retries, 429s) go to stderr: a stall then says why.
  const logger = createLogger({ level: 'warn', destination: process.stderr });
  const ingest = await startIngest({ orgs: [org], stream, topics, logger });
  // The poller's start (the claim, the cursor read) is a one-off cost the bare loop does not pay: timed
  // apart, and the catch-up rate counts from here.
  const startedAt = performance.now();
  const startupMs = startedAt - begun;
  const poller = () => {
    const p = ingest.pollers[0];
    if (!p) throw new Error('startIngest started no poller for the bench org');
    return p;
  };
  const describe = () => {
    const h = poller().health();
    return `${h.pages} pages stored, ${h.blocked} failures in a row, next request ${poller().position()}`;
  };
  try {
    return await body({ events: () => poller().health().events, startedAt, startupMs, describe });
  } finally {
    await ingest.stop();
    await stream.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Events per second from the poller's start until every event is durably on the stream (its start-up,
 * the claim and the cursor read, apart in `startupMs`); fails when no new event was stored for STALL_MS.
 */
export async function hooklogCatchUp(sim: SimulatedOrg, events: number): Promise<{ rate: number; startupMs: number }> {
  return withIngest(sim, { poll_interval_ms: 60_000, rate_limit_share: 1 }, async (h) => {
    let stored = 0;
    let progressAt = performance.now();
    while (h.events() < events) {
      if (h.events() > stored) {
        stored = h.events();
        progressAt = performance.now();
      } else if (performance.now() - progressAt > STALL_MS) {
        throw new Error(
          `hooklog poller stalled: no new event stored for ${STALL_MS / 1000} s, ${h.events()} of ${events} stored; ${h.describe()}`,
        );
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    return { rate: events / ((performance.now() - h.startedAt) / 1000), startupMs: h.startupMs };
  });
}

export interface BudgetUse {
  /** Our requests in the measured windows / (allowed per window × windows). */
  readonly share: number;
  readonly requests: number;
  readonly windows: number;
  readonly allowedPerWindow: number;
  readonly violations: number;
  readonly served429: number;
  readonly exhaustedWindows: number;
}

/**
 * Polls a backlog for `seconds` with limits on and reports the share of the
 * allowed budget used in the complete windows in between (the first and last,
 * partial, windows are left out).
 */
export async function budgetUse(sim: SimulatedOrg, share: number, seconds: number): Promise<BudgetUse> {
  const bucket = sim.buckets.logs!;
  const allowed = new RateBudget({ share }).allowedPerWindow(bucket.options.limit);
  return withIngest(sim, { poll_interval_ms: 1_000, rate_limit_share: share }, async () => {
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const windows = [...bucket.usedPerWindow.entries()].sort((a, b) => a[0] - b[0]).slice(1, -1);
    if (windows.length === 0) {
      throw new Error(
        `limits on: no complete rate-limit window in ${seconds} s (${bucket.usedPerWindow.size} windows seen)`,
      );
    }
    const requests = windows.reduce((n, [, used]) => n + used, 0);
    return {
      share: requests / (allowed * windows.length),
      requests,
      windows: windows.length,
      allowedPerWindow: allowed,
      violations: sim.violations.length,
      served429: bucket.served429,
      exhaustedWindows: bucket.exhaustedWindows,
    };
  });
}
