/** Helpers for this folder's tests only. */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { randomName, waitFor } from '../../../test/support/wait.js';
import type { ConsumedRecord } from '../types.js';
import type { EmbeddedStream } from './embedded-stream.js';

export const freshDir = (): string => mkdtempSync(join(tmpdir(), 'hooklog-embedded-'));

/** A `freshDir` factory for one test file: every directory it made is removed after the file's tests. */
export function tempDirs(): () => string {
  const made: string[] = [];
  afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));
  return () => {
    const d = freshDir();
    made.push(d);
    return d;
  };
}

/** Segment files of the log under `dataDir`, oldest first. */
export function segmentFiles(dataDir: string): string[] {
  return readdirSync(join(dataDir, 'stream'))
    .filter((n) => n.endsWith('.seg'))
    .sort()
    .map((n) => join(dataDir, 'stream', n));
}

/**
 * Every retained record of `topic`, read through a consumer of a fresh group,
 * sorted by partition and offset. Waits until each non-empty partition was
 * delivered up to its end offset.
 */
export async function readAll(stream: EmbeddedStream, topic: string): Promise<ConsumedRecord[]> {
  const ends = stream.endOffsets(topic);
  const got: ConsumedRecord[] = [];
  const reached = new Map<number, number>();
  const group = randomName('readall');
  const consumer = await stream.consume({
    topic,
    group,
    maxBatchWaitMs: 5,
    handler: async (b) => {
      got.push(...b.records);
      reached.set(b.partition, b.lastOffset + 1);
    },
  });
  try {
    await waitFor(
      () =>
        [...ends]
          .filter(([p, end]) => end !== 0 && reached.get(p) !== end)
          .map(([partition, end]) => ({ partition, end, reached: reached.get(partition) ?? null })),
      {
        until: (behind) => behind.length === 0,
        timeoutMs: 10_000,
        what: `all of ${topic}`,
      },
    );
  } finally {
    await consumer.stop();
    // A one-off reader: it must not hold retention back afterwards.
    await stream.forgetGroup(group, topic);
  }
  return got.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}
