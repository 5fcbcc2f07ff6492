import { describe, expect, it } from 'vitest';
import { waitFor, waitForCount } from './wait.js';

describe('waitFor', () => {
  it('returns the first value `until` accepts, and on a time-out names the last one it refused', async () => {
    const rows: string[] = [];
    const got = await waitFor(() => (rows.push(`r${rows.length}`), [...rows]), { until: (r) => r.length === 3 });
    expect(got).toEqual(['r0', 'r1', 'r2']);
    await expect(
      waitFor(() => [{ n: '2' }], { until: (r) => r.length === 2, timeoutMs: 30, intervalMs: 1, what: 'two rows' }),
    ).rejects.toThrow(
      /^timed out after \d+\.\d s \(\d+ polls\) waiting for two rows; last saw 1 item: \[\{"n":"2"\}\]$/,
    );
  });

  it('names what `seen` returns when a boolean probe times out', async () => {
    const deliveries = ['d1', 'd2'];
    await expect(
      waitFor(() => deliveries.length === 3, {
        seen: () => ({ deliveries: deliveries.length }),
        timeoutMs: 30,
        intervalMs: 1,
        what: 'three deliveries',
      }),
    ).rejects.toThrow(/waiting for three deliveries; last saw \{"deliveries":2\}$/);
  });

  it('says that a probe answering only a boolean or nothing cannot say more, and names a failing probe', async () => {
    await expect(waitFor(() => false, { timeoutMs: 20, intervalMs: 1 })).rejects.toThrow(
      /last saw false \(the probe returns only a boolean: give it `until` or `seen`\)/,
    );
    await expect(waitFor(() => undefined, { timeoutMs: 20, intervalMs: 1 })).rejects.toThrow(
      /last saw undefined \(the probe returns nothing it looked at: give it `until` or `seen`\)/,
    );
    const failing = () => {
      throw new Error('no broker');
    };
    await expect(waitFor(failing, { timeoutMs: 20, intervalMs: 1, seen: () => 'no rows' })).rejects.toThrow(
      /last saw the probe failed: no broker; "no rows"$/,
    );
  });

  it('bounds what it shows', async () => {
    const big = 'x'.repeat(5_000);
    const err = (await waitFor(() => big, { until: () => false, timeoutMs: 10, intervalMs: 1 }).catch(
      (e: unknown) => e,
    )) as Error;
    expect(err.message).toMatch(/… \(5002 chars\)$/);
    expect(err.message.length).toBeLessThan(1_000);
    // Whatever a test holds shows without failing the message: an object that refers to itself, a buffer.
    const org: Record<string, unknown> = { id: 'acme', body: Buffer.from('abc') };
    org.self = org;
    await expect(waitFor(() => [org], { until: () => false, timeoutMs: 10, intervalMs: 1 })).rejects.toThrow(
      /last saw 1 item: \[\{"id":"acme","body":"<3 bytes>","self":"<repeated>"\}\]$/,
    );
  });
});

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
