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

/** The exposition: Prometheus text format 0.0.4 and its content type. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
