/**
 * How long the event loop was held while hooklog starts, from the moment HTTP listens: a request that arrives
 * while the loop is held is answered only once it is free, so a held loop turns into late answers (a 204 past
 * `server.ack_timeout_ms`). Reported in the `hooklog started` line; `test/e2e/restart.test.ts` bounds it.
 *
 * Two figures, because a busy machine delays a loop too: `delayMaxMs` is the longest a 10 ms timer fired late
 * (wall time: what a request waited, whatever the cause), `busyMaxMs` the CPU time the process spent during the
 * longest-working late turn (the loop held by work of its own, such as a synchronous native call, rather than
 * waiting for a core). The second is what a change to hooklog moves; the first is what a client saw.
 */
export interface LoopStalls {
  /** Stops watching and returns the figures since `watchLoopStalls`. */
  stop(): { readonly delayMaxMs: number; readonly busyMaxMs: number };
}

export function watchLoopStalls(intervalMs = 10): LoopStalls {
  let delayMax = 0;
  let busyMax = 0;
  let lastWall = performance.now();
  let lastCpu = process.cpuUsage();
  const sample = () => {
    const wall = performance.now();
    const cpu = process.cpuUsage();
    const turn = wall - lastWall;
    const late = turn - intervalMs;
    if (late > delayMax) delayMax = late;
    // Only a late turn counts: an on-time one held nothing, whatever other threads (chdb's, libuv's) burnt meanwhile.
    if (late > intervalMs) {
      const busy = Math.min(turn, (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000);
      if (busy > busyMax) busyMax = busy;
    }
    lastWall = wall;
    lastCpu = cpu;
  };
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      // The turn in progress counts too: work just before `stop` held the loop as much as any.
      sample();
      return { delayMaxMs: Math.round(delayMax), busyMaxMs: Math.round(busyMax) };
    },
  };
}
