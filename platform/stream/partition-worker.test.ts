import { describe, expect, it, vi } from 'vitest';
import { waitFor } from '../../test/support/wait.js';
import { PartitionWorker, type PartitionWorkerOptions } from './partition-worker.js';
import type { ConsumedRecord, RecordBatch } from './types.js';

const records = (from: number, n: number): ConsumedRecord[] =>
  Array.from({ length: n }, (_, i) => ({
    topic: 't',
    partition: 0,
    offset: from + i,
    key: 'k',
    value: Buffer.from(String(from + i)),
    headers: {},
    timestamp: 0,
  }));

function worker(over: Partial<PartitionWorkerOptions> & Pick<PartitionWorkerOptions, 'handler'>) {
  const commits: number[] = [];
  const flow: string[] = [];
  const w = new PartitionWorker({
    topic: 't',
    partition: 0,
    maxBatchRecords: 10,
    maxBatchWaitMs: 10,
    maxBufferedRecords: 100,
    commit: async (n) => void commits.push(n),
    pause: () => void flow.push('pause'),
    resume: () => void flow.push('resume'),
    retryPolicy: { initialMs: 1, multiplier: 1, maxMs: 1, retries: Infinity, jitter: 0 },
    ...over,
  });
  return { w, commits, flow };
}

describe('PartitionWorker', () => {
  it('commits the offset after each finished batch, in order', async () => {
    const seen: number[][] = [];
    const { w, commits } = worker({ handler: async (b) => void seen.push(b.records.map((r) => r.offset)) });
    w.push(records(0, 25));
    await waitFor(() => commits.at(-1), { until: (n) => n === 25 });
    await w.stop();
    expect(seen).toEqual([
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      [10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
      [20, 21, 22, 23, 24],
    ]);
    expect(commits).toEqual([10, 20, 25]);
  });

  it('never commits for a revoked partition, even when the in-flight handler finishes afterwards', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    const { w, commits } = worker({
      handler: async () => {
        started = true;
        await gate;
      },
    });
    w.push(records(0, 5));
    await waitFor(() => started, { what: 'the batch handler to start', seen: () => ({ buffered: w.buffered }) });
    const revoked = w.revoke();
    release();
    await revoked;
    expect(commits).toEqual([]);
    w.push(records(5, 5));
    expect(w.buffered).toBe(0);
  });

  it('retries a failing batch without skipping it or committing past it', async () => {
    let calls = 0;
    const batches: RecordBatch[] = [];
    const { w, commits } = worker({
      handler: async (b) => {
        batches.push(b);
        if (++calls < 4) throw new Error('down');
      },
    });
    w.push(records(0, 3));
    await waitFor(() => commits.length, { until: (n) => n === 1 });
    await w.stop();
    expect(batches.map((b) => [b.firstOffset, b.lastOffset])).toEqual([
      [0, 2],
      [0, 2],
      [0, 2],
      [0, 2],
    ]);
    expect(commits).toEqual([3]);
  });

  it('pauses fetching when the buffer is full and resumes once it drains to half', async () => {
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const { w, flow, commits } = worker({ maxBufferedRecords: 20, handler: () => gate });
    w.push(records(0, 10));
    w.push(records(10, 15));
    expect(flow).toEqual(['pause']);
    const open = release;
    gate = Promise.resolve();
    open();
    await waitFor(() => commits.at(-1), { until: (n) => n === 25 });
    expect(flow).toEqual(['pause', 'resume']);
    await w.stop();
  });

  it("hands an idle partition's first records over at once, then at most one partial batch per maxBatchWaitMs", async () => {
    vi.useFakeTimers();
    try {
      const seen: number[][] = [];
      const { w, commits } = worker({
        maxBatchWaitMs: 1000,
        handler: async (b) => void seen.push(b.records.map((r) => r.offset)),
      });
      // Idle since start: no interval to wait out, so the first records go without the clock moving.
      w.push(records(0, 3));
      await vi.advanceTimersByTimeAsync(0);
      expect(commits).toEqual([3]);
      // Right after a cut, a partial batch waits for the rest of the interval…
      w.push(records(3, 2));
      await vi.advanceTimersByTimeAsync(999);
      expect(commits).toEqual([3]);
      await vi.advanceTimersByTimeAsync(1);
      expect(commits).toEqual([3, 5]);
      // …but a full one does not.
      w.push(records(5, 10));
      await vi.advanceTimersByTimeAsync(0);
      expect(commits).toEqual([3, 5, 15]);
      // A partition quiet for longer than the interval hands its next record over at once again.
      await vi.advanceTimersByTimeAsync(5000);
      w.push(records(15, 1));
      await vi.advanceTimersByTimeAsync(0);
      expect(commits).toEqual([3, 5, 15, 16]);
      expect(seen).toEqual([[0, 1, 2], [3, 4], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14], [15]]);
      const stopped = w.stop();
      await vi.advanceTimersByTimeAsync(0);
      await stopped;
    } finally {
      vi.useRealTimers();
    }
  });

  it('on stop, hands over the partial batch at once and commits it', async () => {
    const { w, commits } = worker({ maxBatchWaitMs: 60_000, handler: async () => undefined });
    w.push(records(0, 3));
    await w.stop();
    expect(commits).toEqual([3]);
  });
});

describe('PartitionWorker with batch plans', () => {
  function planStore(initial: Array<{ first: number; last: number }> = []) {
    const recorded = [...initial];
    return {
      recorded,
      plans: {
        load: async (_p: number, from: number) => recorded.filter((r) => r.last >= from),
        record: async (_p: number, r: { first: number; last: number }) => void recorded.push(r),
      },
    };
  }

  it('records each batch range before the handler sees it', async () => {
    const { recorded, plans } = planStore();
    const seenWhenHandled: number[] = [];
    const { w, commits } = worker({ plans, handler: async () => void seenWhenHandled.push(recorded.length) });
    w.push(records(0, 25));
    await waitFor(() => commits.at(-1), { until: (n) => n === 25 });
    await w.stop();
    expect(recorded).toEqual([
      { first: 0, last: 9 },
      { first: 10, last: 19 },
      { first: 20, last: 24 },
    ]);
    expect(seenWhenHandled).toEqual([1, 2, 3]);
  });

  it('re-cuts recorded ranges exactly, whatever size and time say, then cuts new ones after them', async () => {
    // Recorded by an earlier run: a time cut of 3 and one of 7 records.
    const { recorded, plans } = planStore([
      { first: 5, last: 7 },
      { first: 8, last: 14 },
    ]);
    const seen: number[][] = [];
    const { w, commits } = worker({
      plans,
      maxBatchRecords: 4,
      maxBatchWaitMs: 5,
      handler: async (b) => void seen.push(b.records.map((r) => r.offset)),
    });
    w.push(records(5, 14));
    await waitFor(() => commits.at(-1), { until: (n) => n === 19 });
    await w.stop();
    expect(seen).toEqual([
      [5, 6, 7],
      [8, 9, 10, 11, 12, 13, 14],
      [15, 16, 17, 18],
    ]);
    expect(recorded.slice(2)).toEqual([{ first: 15, last: 18 }]);
  });

  it('leaves an incomplete recorded batch uncommitted on stop', async () => {
    const { plans } = planStore([{ first: 0, last: 9 }]);
    const { w, commits } = worker({ plans, handler: async () => undefined });
    w.push(records(0, 4)); // a plain stop would hand these 4 over and commit them
    await w.stop();
    expect(commits).toEqual([]);
  });
});
