/**
 * The one Prometheus registry of the process, served by `GET /metrics`.
 *
 * Components declare their metrics through `counter`/`gauge`/`histogram`,
 * which return the already-registered metric when the name exists: a module
 * evaluated twice, or two apps built in one test process, share one series
 * instead of prom-client throwing "already registered". Labels must be
 * low-cardinality values hooklog chose (configured ids, closed reason lists),
 * never fields of a payload.
 */
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

export const registry = new Registry();
registry.setDefaultLabels({ service: 'hooklog' });

let defaultsCollected = false;

/** Process metrics (CPU, memory, event-loop lag, GC); once per process, by the composition root. */
export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ register: registry, prefix: 'hooklog_' });
}

export function counter<L extends string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
  return (
    (registry.getSingleMetric(config.name) as Counter<L> | undefined) ??
    new Counter({ ...config, registers: [registry] })
  );
}

export function gauge<L extends string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
  return (
    (registry.getSingleMetric(config.name) as Gauge<L> | undefined) ?? new Gauge({ ...config, registers: [registry] })
  );
}

export function histogram<L extends string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
  return (
    (registry.getSingleMetric(config.name) as Histogram<L> | undefined) ??
    new Histogram({ ...config, registers: [registry] })
  );
}

/** A counter series counted where it is hot; see `deferredCounter`. */
export interface DeferredCounter {
  inc(): void;
  /** Adds what is pending to the metric and stops folding it (when its owner stops). */
  release(): void;
}

/** The folds a metric runs before each read, on the metric itself: module copies of this file share them. */
const FOLDS = Symbol.for('hooklog.metrics.folds');
type Folding = { [FOLDS]?: Set<() => void>; collect?: (this: unknown) => unknown };

/**
 * One series of `metric`, counted in a plain number and added to the metric whenever it is read (a scrape, or
 * `get()`: prom-client calls the metric's `collect` first), so what is read is the same total. For paths taken
 * on every request: prom-client's `inc` validates and hashes the labels on each call, about a microsecond, which
 * the token hook paid on every sign-in.
 */
export function deferredCounter<L extends string>(
  metric: Counter<L>,
  labels: Partial<Record<L, string | number>>,
): DeferredCounter {
  let pending = 0;
  const fold = (): void => {
    if (pending === 0) return;
    const n = pending;
    pending = 0;
    metric.inc(labels, n);
  };
  const m = metric as unknown as Folding;
  let folds = m[FOLDS];
  if (folds === undefined) {
    const set = (folds = new Set());
    const own = m.collect;
    m[FOLDS] = set;
    m.collect = function (this: unknown) {
      for (const f of set) f();
      return own?.call(this);
    };
  }
  folds.add(fold);
  return {
    inc: () => {
      pending++;
    },
    release: () => {
      fold();
      folds.delete(fold);
    },
  };
}

/** The exposition: Prometheus text format 0.0.4 and its content type. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
