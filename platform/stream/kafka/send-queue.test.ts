/** SendQueue's rules, with a plain function standing in for the producer's send. */
import { describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { waitFor } from '../../../test/support/wait.js';
import { SendQueue, type TopicMessages } from './send-queue.js';

const msgs = (...values: string[]) => values.map((v) => ({ key: null, value: v }));

function harness(maxQueuedRecords = 100, maxRequestBytes = 1_000) {
  const calls: TopicMessages[][] = [];
  const pending: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const queue = new SendQueue(
    (batch) => {
      calls.push(batch);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      return new Promise<void>((resolve, reject) =>
        pending.push({
          resolve: () => {
            inFlight--;
            resolve();
          },
          reject: (e) => {
            inFlight--;
            reject(e);
          },
        }),
      );
    },
    { maxQueuedRecords, maxRequestBytes },
  );
  return { queue, calls, pending, maxInFlight: () => maxInFlight };
}

describe('SendQueue', () => {
  it('keeps one send outstanding and coalesces what queued meanwhile, in order, per topic', async () => {
    const h = harness();
    const a = h.queue.enqueue('t1', msgs('a'), 10);
    const b = h.queue.enqueue('t1', msgs('b1', 'b2'), 10);
    const c = h.queue.enqueue('t2', msgs('c'), 10);
    const d = h.queue.enqueue('t1', msgs('d'), 10);
    expect(h.calls).toEqual([[{ topic: 't1', messages: msgs('a') }]]);
    h.pending[0]!.resolve();
    await a.done;
    await waitFor(() => h.calls.length, { until: (n) => n === 2 });
    expect(h.calls[1]).toEqual([
      { topic: 't1', messages: msgs('b1', 'b2', 'd') },
      { topic: 't2', messages: msgs('c') },
    ]);
    h.pending[1]!.resolve();
    await Promise.all([b.done, c.done, d.done]);
    expect(h.maxInFlight()).toBe(1);
    await h.queue.drained();
  });

  it('splits coalesced requests at the byte limit', async () => {
    const h = harness(100, 25);
    h.queue.enqueue('t', msgs('x'), 10);
    for (const v of ['a', 'b', 'c']) h.queue.enqueue('t', msgs(v), 10);
    h.pending[0]!.resolve();
    await waitFor(() => h.calls.length, { until: (n) => n === 2 });
    expect(h.calls[1]).toEqual([{ topic: 't', messages: msgs('a', 'b') }]);
    h.pending[1]!.resolve();
    await waitFor(() => h.calls.length, { until: (n) => n === 3 });
    expect(h.calls[2]).toEqual([{ topic: 't', messages: msgs('c') }]);
  });

  it('never sends an append its caller abandoned before it went out', async () => {
    const h = harness();
    h.queue.enqueue('t', msgs('first'), 10);
    const gaveUp = h.queue.enqueue('t', msgs('gave-up'), 10);
    const kept = h.queue.enqueue('t', msgs('kept'), 10);
    gaveUp.abandon();
    h.pending[0]!.resolve();
    await expect(gaveUp.done).rejects.toBeInstanceOf(HooklogError);
    await waitFor(() => h.calls.length, { until: (n) => n === 2 });
    expect(h.calls[1]).toEqual([{ topic: 't', messages: msgs('kept') }]);
    h.pending[1]!.resolve();
    await kept.done;
  });

  it('fails every append of a failed request, then carries on', async () => {
    const h = harness();
    const first = h.queue.enqueue('t', msgs('a'), 10);
    const second = h.queue.enqueue('t', msgs('b'), 10);
    const broken = new Error('broker gone');
    h.pending[0]!.reject(broken);
    await expect(first.done).rejects.toBe(broken);
    await waitFor(() => h.calls.length, { until: (n) => n === 2 });
    h.pending[1]!.resolve();
    await second.done;
  });

  it('refuses appends beyond its record bound with a retriable error', async () => {
    const h = harness(3);
    h.queue.enqueue('t', msgs('a'), 10); // in flight: no longer queued
    h.queue.enqueue('t', msgs('b', 'c'), 10);
    const over = h.queue.enqueue('t', msgs('d', 'e'), 10);
    await expect(over.done).rejects.toMatchObject({ code: 'STREAM_UNAVAILABLE', retriable: true });
    expect(h.queue.queuedRecords).toBe(2);
  });
});
