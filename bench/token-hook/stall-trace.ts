/**
 * Where an event-loop stall's time went (a bench server's `--stall-trace on`, Linux only): a 1 ms timer notes the
 * main thread's scheduler statistics (/proc/thread-self/schedstat: time on a CPU, time runnable but waiting for
 * one) at every tick, so a tick that comes late splits its delay into
 *
 *   on CPU    the thread ran: synchronous work (JS, GC, a native call) — a CPU profile at `at` names it;
 *   waiting   the thread was runnable and the kernel ran something else: the machine, not the server;
 *   blocked   neither: a synchronous system call waited (a sync fs call, an fsync, a page fault on disk).
 *
 * Also the GC pauses that fell in it. The kernel brings a running thread's CPU time up to date at scheduler ticks
 * (1-4 ms), so each part is good to about a tick: a 27 ms stall splits clearly, a 6 ms one only roughly.
 * Opt-in: the tick costs a read of procfs per millisecond, which would show in the CPU per request the bench
 * reports, so a traced run's figures are not results.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';

interface SchedStat {
  /** ns on a CPU, ns runnable waiting for one. */
  readonly cpuNs: number;
  readonly waitNs: number;
}

/** One stall, split. */
export interface Stall {
  /** Seconds since the process started (a `--cpu-prof` profile's time axis, give or take its start-up). */
  readonly atS: number;
  readonly stallMs: number;
  readonly onCpuMs: number;
  readonly waitingMs: number;
  readonly blockedMs: number;
  readonly gcMs: number;
}

export function formatStall(mode: string, s: Stall): string {
  return (
    `stall-trace ${mode}: ${s.stallMs.toFixed(1)} ms loop stall at ${s.atS.toFixed(2)} s: on CPU ${s.onCpuMs.toFixed(1)} ms ` +
    `(GC ${s.gcMs.toFixed(1)} ms), waiting for a CPU ${s.waitingMs.toFixed(1)} ms, blocked ${s.blockedMs.toFixed(1)} ms`
  );
}

/** Starts tracing; `report` gets every stall longer than `thresholdMs`. Returns the stop function. */
export function traceStalls(thresholdMs: number, report: (stall: Stall) => void): () => void {
  const fd = openSync('/proc/thread-self/schedstat', 'r');
  const buf = Buffer.alloc(128);
  const read = (): SchedStat => {
    const n = readSync(fd, buf, 0, buf.length, 0);
    const [cpu, wait] = buf.toString('latin1', 0, n).trim().split(' ');
    return { cpuNs: Number(cpu), waitNs: Number(wait) };
  };
  // Recent GC pauses (start, duration, ms on performance.now()'s axis), to say how much of a stall they were.
  const gcs: Array<readonly [number, number]> = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push([e.startTime, e.duration]);
    if (gcs.length > 256) gcs.splice(0, gcs.length - 256);
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  let last = performance.now();
  let lastStat = read();
  const timer = setInterval(() => {
    const now = performance.now();
    const stat = read();
    const stallMs = now - last - 1; // the timer is due every 1 ms
    if (stallMs > thresholdMs) {
      const onCpuMs = (stat.cpuNs - lastStat.cpuNs) / 1e6;
      const waitingMs = (stat.waitNs - lastStat.waitNs) / 1e6;
      let gcMs = 0;
      for (const [start, duration] of gcs) if (start + duration > last && start < now) gcMs += duration;
      report({
        atS: last / 1000,
        stallMs,
        onCpuMs,
        waitingMs,
        blockedMs: Math.max(0, now - last - onCpuMs - waitingMs),
        gcMs,
      });
    }
    last = now;
    lastStat = stat;
  }, 1);
  timer.unref();
  return () => {
    clearInterval(timer);
    gcObserver.disconnect();
    closeSync(fd);
  };
}
