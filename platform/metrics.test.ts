import { describe, expect, it } from 'vitest';
import { counter, deferredCounter, registry, renderMetrics } from './metrics.js';

/** The value of one series in the exposition text, or undefined when it is not there. */
async function series(name: string, labels: string): Promise<number | undefined> {
  const line = (await renderMetrics()).body.split('\n').find((l) => l.startsWith(`${name}{${labels}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('deferredCounter', () => {
  it('reads the same totals as inc() would, at every scrape and get()', async () => {
    const c = counter({ name: 'hooklog_test_deferred_total', help: 'test', labelNames: ['hook', 'outcome'] });
    const a = deferredCounter(c, { hook: 'a', outcome: 'x' });
    const b = deferredCounter(c, { hook: 'b', outcome: 'x' });
    for (let i = 0; i < 3; i++) a.inc();
    b.inc();
    expect(await series('hooklog_test_deferred_total', 'hook="a",outcome="x"')).toBe(3);
    expect(await series('hooklog_test_deferred_total', 'hook="b",outcome="x"')).toBe(1);
    a.inc();
    a.inc();
    const values = (await c.get()).values;
    expect(values.find((v) => v.labels.hook === 'a')?.value).toBe(5);
    expect(await series('hooklog_test_deferred_total', 'hook="a",outcome="x"')).toBe(5);
  });

  it('does not call prom-client per count: once per read, only with something pending', async () => {
    const c = counter({ name: 'hooklog_test_deferred_calls_total', help: 'test', labelNames: ['hook'] });
    let calls = 0;
    const inc = c.inc.bind(c);
    c.inc = ((...args: Parameters<typeof c.inc>) => {
      calls++;
      inc(...args);
    }) as typeof c.inc;
    const d = deferredCounter(c, { hook: 'h' });
    for (let i = 0; i < 1000; i++) d.inc();
    expect(calls).toBe(0);
    expect(await series('hooklog_test_deferred_calls_total', 'hook="h"')).toBe(1000);
    expect(calls).toBe(1);
    await renderMetrics();
    expect(calls).toBe(1);
  });

  it('keeps a collect the metric had, and release() adds what is pending and stops folding', async () => {
    let collected = 0;
    const c = counter({
      name: 'hooklog_test_deferred_collect_total',
      help: 'test',
      labelNames: ['hook'],
      collect() {
        collected++;
      },
    });
    const d = deferredCounter(c, { hook: 'h' });
    d.inc();
    d.inc();
    d.release();
    expect((await c.get()).values.find((v) => v.labels.hook === 'h')?.value).toBe(2);
    expect(collected).toBe(1);
    expect(registry.getSingleMetric('hooklog_test_deferred_collect_total')).toBe(c);
  });
});
