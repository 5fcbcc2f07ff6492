import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { BackfillProgress } from './backfill.js';
import { barLine, etaSeconds, plainLine, progressWriter } from './progress.js';

const base: BackfillProgress = {
  sinceMs: 0,
  untilMs: 1_000_000,
  coveredToMs: 250_000,
  events: 12_345,
  requests: 13,
  done: false,
  startedMs: 0,
  resumedFrom: null,
};

describe('backfill progress', () => {
  it("draws a bar of the time covered with events, requests and the time left at this run's pace", () => {
    expect(barLine(base, 10_000, 20)).toBe(
      '[#####...............]  25.0% to 1970-01-01T00:04:10Z  12,345 events  13 requests  ETA 30s',
    );
    expect(etaSeconds({ ...base, done: true, coveredToMs: 1_000_000 }, 10_000)).toBe(0);
    expect(etaSeconds({ ...base, coveredToMs: null }, 10_000)).toBeNull();
  });

  it('estimates from what this run did, not what an earlier (killed) run did', () => {
    const resumed = { ...base, coveredToMs: 600_000, resumedFrom: { coveredToMs: 500_000, events: 9_000 } };
    expect(etaSeconds(resumed, 10_000)).toBe(40); // 10% in 10 s, 40% left
  });

  it('writes a line at most every few seconds when not on a terminal, and the final one always', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    let now = 0;
    const w = progressWriter(out, () => now, 5_000);
    now = 6_000;
    w.update(base);
    now = 7_000;
    w.update(base);
    w.finish({ ...base, done: true, coveredToMs: 1_000_000 });
    w.finish({ ...base, done: true, coveredToMs: 1_000_000 });
    expect(text.trim().split('\n')).toEqual([
      plainLine(base, 6_000),
      'backfill 100.0% covered_to=1970-01-01T00:16:40Z events=12345 requests=13 eta=0s',
    ]);
  });
});
