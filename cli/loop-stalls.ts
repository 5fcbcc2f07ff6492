import { closeSync, openSync, readSync } from 'node:fs';
/**
 * How long the event loop was held while hooklog starts, from the moment HTTP listens: a request that arrives
 * while the loop is held is answered only once it is free, so a held loop turns into late answers (a 204 past
 * `server.ack_timeout_ms`). Reported in the `hooklog started` line; `test/e2e/restart.test.ts` bounds it.
 *
 * Two figures, because a busy machine delays a loop too: `delayMaxMs` is the longest a 10 ms timer fired late
 * (wall time: what a request waited, whatever the cause), `busyMaxMs` the CPU time the event loop's own thread spent
 * during the longest-working late turn (the loop held by work of its own, such as a synchronous native call, rather
 * than waiting for a core). The second is what a change to hooklog moves; the first is what a client saw. It counts
 * the loop's thread alone where Linux says what one thread spent (/proc/thread-self/schedstat): embedded ClickHouse
 * loads and opens on a thread of its own meanwhile (platform/store/chdb-thread.ts), which holds no request; the
 * process's CPU is the fallback elsewhere.
 */
export interface LoopStalls {
  /** Stops watching and returns the figures since `watchLoopStalls`. */
  stop(): { readonly delayMaxMs: number; readonly busyMaxMs: number };
}

export function watchLoopStalls(intervalMs = 10): LoopStalls {
  let delayMax = 0;
  let busyMax = 0;
  const cpuMs = threadCpuMs();
  let lastWall = performance.now();
  let lastCpu = cpuMs.read();
  const sample = () => {
    const wall = performance.now();
    const cpu = cpuMs.read();
    const turn = wall - lastWall;
    const late = turn - intervalMs;
    if (late > delayMax) delayMax = late;
    // Only a late turn counts: an on-time one held nothing, whatever other threads (chdb's, libuv's) burnt meanwhile.
    if (late > intervalMs) {
      const busy = Math.min(turn, cpu - lastCpu);
      if (busy > busyMax) busyMax = busy;
    }
    lastWall = wall;
    lastCpu = cpu;
  };
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  let stopped: { readonly delayMaxMs: number; readonly busyMaxMs: number } | null = null;
  return {
    stop: () => {
      // Stopped once (the start's end), then again by the stop of a process that has started: the same figures.
      if (!stopped) {
        clearInterval(timer);
        // The turn in progress counts too: work just before `stop` held the loop as much as any.
        sample();
        cpuMs.close();
        stopped = { delayMaxMs: Math.round(delayMax), busyMaxMs: Math.round(busyMax) };
      }
      return stopped;
    },
  };
}

/**
 * CPU milliseconds spent so far by the calling thread (the event loop's, when called from it): the first field of
 * /proc/thread-self/schedstat (nanoseconds on a CPU), read through one descriptor; the whole process's
 * (process.cpuUsage) where that file cannot be read.
 */
function threadCpuMs(): { read(): number; close(): void } {
  const processMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  let fd: number;
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return { read: processMs, close: () => undefined };
  }
  const buf = Buffer.alloc(128);
  let last = 0;
  const read = () => {
    const n = readSync(fd, buf, 0, buf.length, 0);
    const ns = Number(buf.toString('latin1', 0, n).split(' ', 1)[0]);
    if (Number.isFinite(ns)) last = ns / 1e6;
    return last;
  };
  try {
    if (read() <= 0) throw new Error('no CPU time in /proc/thread-self/schedstat');
  } catch {
    closeSync(fd);
    return { read: processMs, close: () => undefined };
  }
  return { read, close: () => closeSync(fd) };
}
