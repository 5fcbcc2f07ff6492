/**
 * The baseline: the same deliveries' events appended straight to the stream,
 * no HTTP, no parsing, no validation: records shaped exactly as the receiver
 * makes them (value = the event's JSON, hooklog's metadata headers), with the
 * same batch sizes and concurrency, through a stream opened with the same
 * options. Receiver ÷ baseline is what the HTTP receiver costs on top of the
 * stream's own acknowledgement.
 */
import { Header } from '../../platform/stream/headers.js';
import type { Stream, StreamRecord } from '../../platform/stream/types.js';
import type { CellResult, DeliveryFactory } from './load.js';

/** Pre-built record batches (building them is not what is measured), cycled through. */
export function recordBatches(f: DeliveryFactory, org: string, hookId: string, count: number): StreamRecord[][] {
  return Array.from({ length: count }, () => {
    const { body } = f.next();
    const d = JSON.parse(body.toString()) as { eventId: string; data: { events: unknown[] } };
    const headers = {
      [Header.org]: org,
      [Header.source]: 'hook',
      [Header.hookId]: hookId,
      [Header.deliveryId]: d.eventId,
      [Header.receivedAt]: new Date().toISOString(),
    };
    return d.data.events.map((e) => ({ key: org, value: Buffer.from(JSON.stringify(e)), headers }));
  });
}

export async function closedLoopAppend(
  stream: Stream,
  topic: string,
  batches: StreamRecord[][],
  concurrency: number,
  durationMs: number,
): Promise<CellResult> {
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let events = 0;
  let deliveries = 0;
  let next = 0;
  const start = performance.now();
  const deadline = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const batch = batches[next++ % batches.length]!;
        const t0 = performance.now();
        try {
          await stream.append(topic, batch);
          latencies.push(performance.now() - t0);
          events += batch.length;
        } catch {
          failures.error = (failures.error ?? 0) + 1;
        }
        deliveries++;
      }
    }),
  );
  const elapsedMs = performance.now() - start;
  return { eventsPerSec: (events * 1000) / elapsedMs, deliveries, failures, latencies, elapsedMs };
}
