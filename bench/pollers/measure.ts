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
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findLink } from '../../ingest/client/link.js';
import { startIngest } from '../../ingest/index.js';
import { RateBudget } from '../../ingest/client/rate-limit.js';
import { systemLogFirstUrl } from '../../ingest/system-log/first-request.js';
import { parseConfig } from '../../cli/config/load.js';
import { silentLogger } from '../../platform/log.js';
import { topicNames } from '../../platform/stream/headers.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { history, SimulatedOrg } from '../../test/simulated-org/index.js';
import { waitFor } from '../../test/support/wait.js';

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
  let url = systemLogFirstUrl(sim.url, { startMs: Date.now() - 31 * 86_400_000, now: Date.now() });
  let seen = 0;
  for (;;) {
    const res = await fetch(url, { headers: { authorization: 'SSWS sim-token', accept: 'application/json' } });
    const page = JSON.parse(await res.text()) as unknown[];
    seen += page.length;
    url = findLink(res.headers.get('link'), 'next')!;
    if (page.length < 1000) break;
  }
  if (seen !== events) throw new Error(`bare loop saw ${seen} of ${events} events`);
  return events / ((performance.now() - started) / 1000);
}

async function withIngest<T>(
  sim: SimulatedOrg,
  section: Record<string, unknown>,
  body: (handle: { events: () => number; startedAt: number }) => Promise<T>,
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
  const startedAt = performance.now();
  const ingest = await startIngest({ orgs: [org], stream, topics, logger: silentLogger() });
  try {
    return await body({ events: () => ingest.pollers[0]!.health().events, startedAt });
  } finally {
    await ingest.stop();
    await stream.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Events per second from the first request until every event is durably on the stream. */
export async function hooklogCatchUp(sim: SimulatedOrg, events: number): Promise<number> {
  return withIngest(sim, { poll_interval_ms: 60_000, rate_limit_share: 1 }, async (h) => {
    await waitFor(() => h.events() >= events, { what: 'catch-up', timeoutMs: 300_000, intervalMs: 5 });
    return events / ((performance.now() - h.startedAt) / 1000);
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
