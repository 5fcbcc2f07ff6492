import { describe, expect, it } from 'vitest';
import { phases, type Sample } from './timeline.js';

/** A drain of 100 rows that joins for 3 s, then inserts 10 rows every 100 ms with 5 ms of CPU each. */
function drain(joinMs: number): Sample[] {
  const out: Sample[] = [];
  for (let t = 0; t <= joinMs; t += 50) out.push({ t, rows: 0, cpuUs: t * 10 });
  for (let k = 1; k <= 10; k++) out.push({ t: joinMs + k * 100, rows: k * 10, cpuUs: joinMs * 10 + k * 5000 });
  return out;
}

describe('phases', () => {
  it('puts the join in start-up and keeps the steady state free of it', () => {
    const slow = phases(0, 100, drain(3000));
    const fast = phases(0, 100, drain(0));
    expect(slow.startupMs).toBe(3100);
    expect(fast.startupMs).toBe(100);
    // 80 rows in 800 ms whatever the join cost; 80 rows per 40 ms of CPU.
    for (const p of [slow, fast]) {
      expect(p.steadyRate).toBeCloseTo(100, 6);
      expect(p.steadyPerCpuSecond).toBeCloseTo(2000, 6);
      expect(p.window).toEqual([0.1, 0.9]);
    }
  });

  it('has no steady state for a drain that crossed the window in one step', () => {
    const oneStep: Sample[] = [
      { t: 0, rows: 0, cpuUs: 0 },
      { t: 100, rows: 100, cpuUs: 10 },
    ];
    expect(phases(0, 100, oneStep)).toMatchObject({ startupMs: 100, steadyRate: NaN, steadyPerCpuSecond: NaN });
    expect(() => phases(0, 100, [{ t: 0, rows: 0, cpuUs: 0 }])).toThrow(/no rows/);
  });
});
