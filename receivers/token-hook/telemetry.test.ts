import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { registry, renderMetrics } from '../../platform/metrics.js';
import type { Counter } from 'prom-client';
import { createTelemetry } from './telemetry.js';

const NAME = 'hooklog_token_hook_decisions_total';

describe('token hook telemetry', () => {
  it('counts every decision by outcome in the exposition, without a prom-client call per decision', async () => {
    createTelemetry('telemetry-first', silentLogger()); // registers the metric
    const metric = registry.getSingleMetric(NAME) as Counter<'hook' | 'outcome'>;
    let calls = 0;
    const inc = metric.inc.bind(metric);
    metric.inc = ((...args: Parameters<typeof metric.inc>) => {
      calls++;
      inc(...args);
    }) as typeof metric.inc;
    try {
      const t = createTelemetry('telemetry-counted', silentLogger());
      for (let i = 0; i < 100; i++) t.decided('commands', 0.0001);
      for (let i = 0; i < 7; i++) t.decided('deny', 0.0002);
      expect(calls).toBe(0);
      const text = (await renderMetrics()).body;
      const value = (outcome: string) => {
        const line = text
          .split('\n')
          .find(
            (l) =>
              l.startsWith(`${NAME}{`) && l.includes('hook="telemetry-counted"') && l.includes(`outcome="${outcome}"`),
          );
        return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
      };
      expect(value('commands')).toBe(100);
      expect(value('deny')).toBe(7);
      expect(t.counters.decisions.commands).toBe(100);
      // The latency histogram saw every decision too.
      expect(text).toMatch(/hooklog_token_hook_decision_seconds_count{[^}]*hook="telemetry-counted"[^}]*} 107\n/);
      t.decided('none', 0.0001);
      t.stopped(); // folds what is pending
      expect(
        (await metric.get()).values.find((v) => v.labels.hook === 'telemetry-counted' && v.labels.outcome === 'none')
          ?.value,
      ).toBe(1);
    } finally {
      delete (metric as { inc?: unknown }).inc;
    }
  });
});
