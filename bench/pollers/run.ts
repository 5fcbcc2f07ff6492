/**
 * Pollers bench (not part of `npm test`):
 *
 *   npx tsx bench/pollers/run.ts [--events N] [--runs R] [--seconds S]     (npm run bench:pollers -- …)
 *
 * Per run, against a simulated org over real HTTP in this process:
 *   1. catch-up, rate limiting off, N events over 30 days: the bare baseline
 *      (fetch → text → JSON.parse → next link) and hooklog's System Log poller
 *      (auth, budget, per-event checks, atomic append of page + cursor to the
 *      embedded stream with fsync) over the same pages, in alternating order;
 *   2. limits on, a backlog that outlasts S seconds: the share of the allowed
 *      requests per window hooklog made (goal ≥ 0.9), and the violations
 *      (429s, windows driven to Remaining 0) the org saw (goal 0). Two buckets:
 *      20/window at the default share 0.4, and 10/window at share 1 (where the
 *      one-request reserve is what binds).
 * Prints every run to stderr and the summary (medians, min, max, ratios) to stdout.
 * Never hangs: each measurement fails naming what stalled (measure.ts), and
 * every step has a deadline besides (start-up and shutdown included).
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { formatTable, summarize } from '../pipeline/stats.js';
import { bareLoop, budgetUse, hooklogCatchUp, seededOrg, type BudgetUse } from './measure.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '50000' },
    runs: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '6' },
  },
  strict: true,
});
const int = (name: string, v: string | undefined) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
};
const N = int('events', args.events);
const RUNS = int('runs', args.runs);
const SECONDS = int('seconds', args.seconds);
// The first and last 1 s windows are partial and left out: fewer than 3 s may leave no window to measure.
if (SECONDS < 3) throw new Error(`--seconds must be at least 3, got ${SECONDS}`);
/** A catch-up slower than 200 events/s (50 times below the slowest seen) is stuck, not slow. */
const CATCH_UP_MS = Math.max(120_000, N * 5);
const say = (m: string) => process.stderr.write(`${m}\n`);
const out = (m: string) => process.stdout.write(`${m}\n`);

/** Runs one step, failing with its name when it has not finished within `ms`. */
async function step<T>(label: string, ms: number, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label}: not finished after ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([fn(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

const BUCKETS = [
  { label: 'limit 20/s, share 0.4', limit: 20, share: 0.4 },
  { label: 'limit 10/s, share 1.0', limit: 10, share: 1 },
];

async function main(): Promise<void> {
  const bare: number[] = [];
  const hooklog: number[] = [];
  const startups: number[] = [];
  const budgets = new Map<string, BudgetUse[]>(BUCKETS.map((b) => [b.label, []]));
  for (let run = 1; run <= RUNS; run++) {
    const sim = await step(`run ${run}: seeding the org with ${N} events`, 120_000, () => seededOrg(N, false));
    try {
      const order: Array<[string, () => Promise<number>, number[]]> = [
        ['bare fetch+parse', () => bareLoop(sim, N), bare],
        [
          'hooklog poller',
          async () => {
            const r = await hooklogCatchUp(sim, N);
            startups.push(r.startupMs);
            return r.rate;
          },
          hooklog,
        ],
      ];
      if (run % 2 === 0) order.reverse();
      for (const [label, measure, into] of order) {
        const rate = await step(`run ${run} ${label}`, CATCH_UP_MS, measure);
        into.push(rate);
        say(`run ${run}/${RUNS} ${label}: ${Math.round(rate).toLocaleString('en-US')} ev/s`);
      }
    } finally {
      await step(`run ${run}: stopping the org`, 30_000, () => sim.stop());
    }
    for (const b of BUCKETS) {
      const backlog = Math.ceil(((SECONDS + 2) * b.limit * b.share + 2) * 1000);
      const limited = await step(`run ${run} ${b.label}: seeding`, 120_000, () =>
        seededOrg(backlog, { limit: b.limit, windowMs: 1000 }),
      );
      try {
        const u = await step(`run ${run} ${b.label}`, (SECONDS + 60) * 1000, () =>
          budgetUse(limited, b.share, SECONDS),
        );
        budgets.get(b.label)!.push(u);
        say(
          `run ${run}/${RUNS} ${b.label}: ${u.requests} requests in ${u.windows} windows of ${u.allowedPerWindow} allowed → ${u.share.toFixed(3)}; violations ${u.violations}, 429s ${u.served429}, exhausted windows ${u.exhaustedWindows}`,
        );
      } finally {
        await step(`run ${run} ${b.label}: stopping the org`, 30_000, () => limited.stop());
      }
    }
  }
  out(`\nN = ${N} events, ${RUNS} runs, ${cpus().length} CPUs, 1-minute load ${loadavg()[0]!.toFixed(2)}`);
  out(
    `\ncatch-up with rate limiting off, events/s (ratio: median / median); the poller's start-up (claim, cursor read) is timed apart: median ${summarize(startups).median.toFixed(0)} ms\n`,
  );
  out(
    formatTable(
      [
        { mode: 'bare fetch+parse', rates: bare, compare: true },
        { mode: 'hooklog poller', rates: hooklog, compare: true },
      ],
      ['bare fetch+parse'],
    ),
  );
  out(
    `\nlimits on (${SECONDS} s of backlog, complete windows only): share of the allowed requests used, and violations\n`,
  );
  for (const [label, us] of budgets) {
    const s = summarize(us.map((u) => u.share));
    const v = us.reduce((n, u) => n + u.violations + u.served429 + u.exhaustedWindows, 0);
    out(
      `${label.padEnd(24)} allowed ${us[0]!.allowedPerWindow}/window  share used median ${s.median.toFixed(3)} (min ${s.min.toFixed(3)}, max ${s.max.toFixed(3)})  violations+429s+exhausted windows: ${v}`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
