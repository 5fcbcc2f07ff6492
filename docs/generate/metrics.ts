/**
 * The metrics reference, from the process's Prometheus registry
 * (platform/metrics.ts): every metric hooklog declares, with its type, labels
 * and help. Components declare their metrics when their modules load, and two
 * when a hook or the response starts (their telemetry factories); loading
 * every module that declares one, and calling those factories with a silent
 * logger, fills the registry without starting anything.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Counter, Gauge, Histogram, Summary } from 'prom-client';
import { createLogger } from '../../platform/log.js';
import { registry } from '../../platform/metrics.js';
import { createTelemetry } from '../../receivers/token-hook/telemetry.js';
import { createResponseTelemetry } from '../../consumers/response/telemetry.js';
import { cell, code, preamble, table } from './markdown.js';

const REPO = join(import.meta.dirname, '..', '..');
const SOURCES = ['platform', 'receivers', 'ingest', 'consumers', 'analytics', 'console', 'cli'];

/** The source files that declare metrics: they import platform/metrics.ts (tests and test helpers aside). */
export function metricModules(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const path = join(dir, e.name);
      if (e.isDirectory()) return e.name === 'web' || e.name === 'testing' ? [] : walk(path);
      return /\.ts$/.test(e.name) && !/\.(test|fixture)\.ts$|testing\.ts$/.test(e.name) ? [path] : [];
    });
  return SOURCES.flatMap((s) => walk(join(REPO, s)))
    .filter((f) => /from '[./]*(platform\/)?metrics\.js'/.test(readFileSync(f, 'utf8')))
    .map((f) => relative(REPO, f))
    .sort();
}

function typeOf(m: unknown): string {
  if (m instanceof Counter) return 'counter';
  if (m instanceof Gauge) return 'gauge';
  if (m instanceof Histogram) return 'histogram';
  if (m instanceof Summary) return 'summary';
  return 'untyped';
}

export async function metricsReference(): Promise<string> {
  for (const file of metricModules()) await import(pathToFileURL(join(REPO, file)).href);
  const silent = createLogger({ level: 'silent' });
  createTelemetry('reference', silent);
  createResponseTelemetry(silent);
  const metrics = registry
    .getMetricsAsArray()
    .map((m) => m as unknown as { name: string; help: string; labelNames?: readonly string[] })
    .sort((a, b) => a.name.localeCompare(b.name));
  return [
    preamble(
      'Metrics reference',
      'Every metric hooklog serves at `GET /metrics` (Prometheus text), from its registry. Every series also carries\n' +
        '`service="hooklog"`; beside these, the process\'s own (CPU, memory, event loop, garbage collection: prom-client\'s\n' +
        'default metrics) are prefixed `hooklog_`. What to watch: [Monitoring](../operate/monitoring.md).',
    ),
    table(
      ['Metric', 'Type', 'Labels', 'Help'],
      metrics.map((m) => [code(m.name), typeOf(m), (m.labelNames ?? []).map((l) => code(l)).join(', '), cell(m.help)]),
    ) + '\n',
  ].join('\n');
}
