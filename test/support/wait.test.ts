import { describe, expect, it } from 'vitest';
import { waitForCount } from './wait.js';

describe('waitForCount', () => {
  it('returns once the count reaches the target, however long progress takes', async () => {
    let n = 0;
    await waitForCount(() => ++n, 40, { stallMs: 200, timeoutMs: 10_000, intervalMs: 1, what: 'n' });
    expect(n).toBe(40);
  });

  it('fails on a count that stops moving, naming how far it got', async () => {
    let n = 0;
    const probe = () => Math.min(++n, 3);
    await expect(
      waitForCount(probe, 5, { stallMs: 50, timeoutMs: 10_000, intervalMs: 1, what: 'rows' }),
    ).rejects.toThrow(/stalled for 50 ms waiting for rows: at 3 of 5/);
  });

  it('fails at the overall deadline on a count that moves but never arrives', async () => {
    let n = 0;
    await expect(
      waitForCount(() => ++n, Number.MAX_SAFE_INTEGER, { stallMs: 1_000, timeoutMs: 60, intervalMs: 1, what: 'n' }),
    ).rejects.toThrow(/timed out after 60 ms waiting for n: at \d+ of/);
  });

  it('polls past a probe that throws, and names its error when the count never moves', async () => {
    let calls = 0;
    const flaky = () => {
      if (++calls <= 3) throw new Error('coordinator loading');
      return calls;
    };
    await waitForCount(flaky, 10, { stallMs: 200, timeoutMs: 10_000, intervalMs: 1, what: 'n' });
    const broken = () => {
      throw new Error('no broker');
    };
    await expect(waitForCount(broken, 5, { stallMs: 50, timeoutMs: 10_000, intervalMs: 1, what: 'n' })).rejects.toThrow(
      /stalled for 50 ms waiting for n: at NaN of 5 .*; last probe failed: no broker/,
    );
  });
});
