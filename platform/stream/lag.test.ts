/**
 * Consumer lag in /metrics on both stream kinds: a group whose handler fails
 * shows every appended record as lag and a growing age; once the handler
 * succeeds, both fall to zero.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { kafkaBrokerList } from '../../test/kafka/inject.js';
import { max, total } from '../../test/support/metrics.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { silentLogger } from '../log.js';
import { renderMetrics } from '../metrics.js';
import { openEmbeddedStream } from './embedded/index.js';
import { freshDir } from './embedded/testing.js';
import { openKafkaStream } from './kafka/index.js';
import type { Stream } from './types.js';

const dir = freshDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const scrape = async () => (await renderMetrics()).body;

async function stalledThenRecovered(stream: Stream): Promise<void> {
  const topic = randomName('lag');
  const group = randomName('g');
  await stream.ensureTopics([{ name: topic, partitions: 2 }]);
  await stream.append(
    topic,
    Array.from({ length: 30 }, (_, i) => ({ key: `org${i % 5}`, value: Buffer.from(`r${i}`), headers: {} })),
  );
  let healthy = false;
  const c = await stream.consume({
    topic,
    group,
    maxBatchWaitMs: 10,
    handler: async () => {
      if (!healthy) throw new Error('store down (injected)');
    },
  });
  try {
    const labels = { group, topic };
    await waitFor(async () => total(await scrape(), 'hooklog_consumer_lag_records', labels), {
      until: (n) => n === 30,
      what: 'lag of 30 records',
    });
    const seconds = await waitFor(async () => max(await scrape(), 'hooklog_consumer_lag_seconds', labels), {
      until: (s) => s > 0,
      what: 'lag in seconds',
    });
    await waitFor(async () => max(await scrape(), 'hooklog_consumer_lag_seconds', labels), {
      until: (n) => n > seconds + 0.2,
      what: 'lag growing',
    });
    healthy = true;
    await waitFor(
      async () => {
        const text = await scrape();
        return {
          records: total(text, 'hooklog_consumer_lag_records', labels),
          seconds: max(text, 'hooklog_consumer_lag_seconds', labels),
        };
      },
      { until: (lag) => lag.records === 0 && lag.seconds === 0, timeoutMs: 30_000, what: 'lag back to zero' },
    );
  } finally {
    await c.stop();
  }
  expect(total(await scrape(), 'hooklog_consumer_lag_records', { group })).toBe(0); // a stopped consumer's series are removed
}

describe('consumer lag metrics', () => {
  it('embedded: grows while the handler fails, falls to zero after', async () => {
    const stream = await openEmbeddedStream({ dataDir: dir, logger: silentLogger() });
    try {
      await stalledThenRecovered(stream);
    } finally {
      await stream.close();
    }
  });

  it('kafka: grows while the handler fails, falls to zero after', async () => {
    const stream = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('lag'),
      logger: silentLogger(),
      heartbeatIntervalMs: 500,
      sessionTimeoutMs: 10_000,
    });
    try {
      await stalledThenRecovered(stream);
    } finally {
      await stream.close();
    }
  });
});
