/**
 * The risk fold on both stream kinds (the suite is testing/risk-fold.ts):
 * rises once, falls on expiry for a quiet org, a restart repeats nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { silentLogger } from '../../../platform/log.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../../platform/stream/embedded/index.js';
import { openKafkaStream } from '../../../platform/stream/kafka/index.js';
import type { Stream } from '../../../platform/stream/types.js';
import { kafkaBrokers } from '../../../test/kafka/inject.js';
import { randomName } from '../../../test/support/wait.js';
import { riskFoldSuite } from '../testing/risk-fold.js';

const log = silentLogger();

describe('the risk fold (embedded)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-risk-'));
  let stream: EmbeddedStream;
  beforeAll(async () => {
    stream = await openEmbeddedStream({ dataDir: dir, logger: log });
  });
  afterAll(async () => {
    await stream?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  riskFoldSuite(() => stream, 8_000, 20_000);
});

describe('the risk fold (Kafka)', () => {
  let stream: Stream;
  beforeAll(async () => {
    stream = await openKafkaStream({ brokers: kafkaBrokers().split(','), clientId: randomName('risk'), logger: log });
  });
  afterAll(async () => {
    await stream?.close();
  });
  // Alerting's group joins and the three rises take about a second here.
  riskFoldSuite(() => stream, 12_000, 60_000);
});
