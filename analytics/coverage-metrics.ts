/**
 * The coverage figures in `/metrics`, from the same named queries as
 * `hooklog coverage`, over the last `window` (default 24 h), per org that
 * sends hooks: events by path (hooks only, System Log only, both), hook
 * latency p50/p99 and lost deliveries. Computed at scrape time from the store,
 * at most once per `cacheMs` (a scrape never queries ClickHouse more often).
 */
import type { Logger } from '../platform/log.js';
import { gauge } from '../platform/metrics.js';
import type { Store } from '../platform/store/index.js';
import { runNamedQuery } from './run.js';

interface Figures {
  readonly via: Record<'hooks_only' | 'log_only' | 'both', number>;
  readonly p50: number | null;
  readonly p99: number | null;
  readonly lost: number;
}

/** What the gauges read: the latest registration (a process restarted in tests registers again). */
let current: (() => Promise<Map<string, Figures>>) | null = null;

async function each(set: (org: string, f: Figures) => void): Promise<void> {
  if (!current) return;
  for (const [org, f] of await current()) set(org, f);
}

const gauges = {
  events: gauge({
    name: 'hooklog_hook_coverage_events',
    help: 'Events of the last 24 h by the paths that delivered them: hooks_only, log_only (the hooks missed them), both.',
    labelNames: ['org', 'via'],
    async collect() {
      this.reset();
      await each((org, f) => Object.entries(f.via).forEach(([via, n]) => this.set({ org, via }, n)));
    },
  }),
  latency: gauge({
    name: 'hooklog_hook_latency_ms',
    help: 'Hook latency (receipt − published) over the last 24 h, by quantile.',
    labelNames: ['org', 'quantile'],
    async collect() {
      this.reset();
      await each((org, f) => {
        if (f.p50 !== null) this.set({ org, quantile: '0.5' }, f.p50);
        if (f.p99 !== null) this.set({ org, quantile: '0.99' }, f.p99);
      });
    },
  }),
  lost: gauge({
    name: 'hooklog_hook_deliveries_lost',
    help: 'event_hook.delivery failures in the last 24 h (lost hook deliveries).',
    labelNames: ['org'],
    async collect() {
      this.reset();
      await each((org, f) => this.set({ org }, f.lost));
    },
  }),
};

/** Makes the gauges report `orgs` from `store`; returns the function that stops it (the store is about to close). */
export function registerCoverageMetrics(
  store: Store,
  orgs: readonly string[],
  logger: Logger,
  opts: { windowMs?: number; cacheMs?: number } = {},
): () => void {
  void gauges;
  if (orgs.length === 0) return () => undefined;
  const windowMs = opts.windowMs ?? 86_400_000;
  const cacheMs = opts.cacheMs ?? 30_000;
  let cached: { at: number; figures: Promise<Map<string, Figures>> } | null = null;
  const figures = (): Promise<Map<string, Figures>> => {
    const now = Date.now();
    if (!cached || now - cached.at > cacheMs)
      cached = { at: now, figures: compute(store, orgs, now - windowMs, now, logger) };
    return cached.figures;
  };
  current = figures;
  return () => {
    if (current === figures) current = null;
  };
}

async function compute(
  store: Store,
  orgs: readonly string[],
  since: number,
  until: number,
  logger: Logger,
): Promise<Map<string, Figures>> {
  const out = new Map<string, Figures>();
  const params = (org: string) => ({
    org,
    since: new Date(since).toISOString(),
    until: new Date(until).toISOString(),
    limit: '10000',
  });
  for (const org of orgs) {
    try {
      const cov = await runNamedQuery(store, 'hook_coverage', params(org));
      const lost = await runNamedQuery(store, 'hook_deliveries_lost', params(org));
      const latency = (await runNamedQuery(store, 'hook_latency', params(org))).rows[0];
      const sum = (rows: Array<Record<string, unknown>>, c: string) => rows.reduce((a, r) => a + Number(r[c] ?? 0), 0);
      const num = (v: unknown) => (v === null || v === undefined || Number.isNaN(Number(v)) ? null : Number(v));
      out.set(org, {
        via: {
          hooks_only: sum(cov.rows, 'hooks_only'),
          log_only: sum(cov.rows, 'log_only'),
          both: sum(cov.rows, 'both'),
        },
        p50: num(latency?.p50_ms),
        p99: num(latency?.p99_ms),
        lost: sum(lost.rows, 'lost'),
      });
    } catch (err) {
      logger.warn({ err, org }, 'coverage_metrics_failed');
    }
  }
  return out;
}
