/** What a bench server reports when asked (`cpu` over IPC): cumulative CPU and GC time, and the largest pauses. */
export interface ServerSample {
  /** CPU time used by the process since it started (user + system), µs. */
  readonly cpuUs: number;
  /** GC pause time since the process started, ms. */
  readonly gcMs: number;
  /** The longest single GC pause since the last sample, ms. */
  readonly gcMaxMs: number;
  /** The longest event-loop stall since the last sample (monitorEventLoopDelay at 1 ms resolution), ms. */
  readonly stallMaxMs: number;
}
