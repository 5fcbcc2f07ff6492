/**
 * How busy the machine was while a bench measured, beyond its load average: the share of CPU time the
 * hypervisor gave to other guests ("steal", /proc/stat). On a shared host a slice with heavy steal spoils
 * tail latencies and CPU-per-request figures alike, whatever the code does, so a bench prints it beside each
 * run and the runs taken under steal are marked: such a figure does not count towards a goal.
 */
import { readFileSync } from 'node:fs';

/** Above this share of steal over a run, the run counts as taken on a busy machine. */
export const BUSY_STEAL = 0.05;

interface CpuTimes {
  readonly total: number;
  readonly steal: number;
}

function cpuTimes(): CpuTimes | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user)
    const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
    if (f.length < 8 || f.some((x) => !Number.isFinite(x))) return undefined;
    return { total: f.reduce((a, b) => a + b, 0), steal: f[7]! };
  } catch {
    return undefined; // not Linux: no figure rather than a wrong one
  }
}

/** Starts measuring; `stop()` gives the steal share since (0..1), or undefined where /proc/stat is not there. */
export function stealMeter(): { stop(): number | undefined } {
  const start = cpuTimes();
  return {
    stop() {
      const end = cpuTimes();
      if (!start || !end || end.total <= start.total) return undefined;
      return (end.steal - start.steal) / (end.total - start.total);
    },
  };
}

/** `2.1%`; `n/a` off Linux. */
export function stealPercent(share: number | undefined): string {
  return share === undefined ? 'n/a' : `${(share * 100).toFixed(1)}%`;
}

/** `steal 2.1%`, with `BUSY` when past BUSY_STEAL. */
export function describeSteal(share: number | undefined): string {
  return `steal ${stealPercent(share)}${share !== undefined && share > BUSY_STEAL ? ' BUSY (does not count)' : ''}`;
}
