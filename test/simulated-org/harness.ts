/**
 * Test plumbing for the pollers against the simulated org, in-process: a real
 * embedded stream in a temp dir, org configs built by the production config
 * parser, short slow-retry policies, a collector reading a topic back, and a
 * logger whose lines the test can inspect.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { IdpPolicies } from '../../platform/identity/policies.js';
import type { OrgConfig } from '../../ingest/config.js';
import { parseConfig } from '../../cli/config/load.js';
import { createLogger, type Logger } from '../../platform/log.js';
import { topicNames, type Topics } from '../../platform/stream/headers.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import type { ConsumedRecord, Consumer, Stream } from '../../platform/stream/types.js';
import { randomName } from '../support/wait.js';
import type { SimulatedOrg } from './server.js';

/** Retry waits short enough for tests; the shapes are production's. */
export const FAST_POLICIES: Partial<IdpPolicies> = {
  transient: { initialMs: 20, multiplier: 2, maxMs: 400, retries: Infinity, jitter: 0.2 },
  rateLimitedFallback: { initialMs: 200, multiplier: 2, maxMs: 2_000, retries: Infinity, jitter: 0.2 },
  resetJitter: { jitterMinMs: 50, jitterMaxMs: 150, maxMs: 10_000 },
  blocked: { initialMs: 400, multiplier: 2, maxMs: 2_000, retries: Infinity, jitter: 0 },
  append: { initialMs: 20, multiplier: 2, maxMs: 400, retries: Infinity, jitter: 0.2 },
};

export interface TestStream {
  readonly stream: EmbeddedStream;
  readonly topics: Topics;
  close(): Promise<void>;
}

export async function openTestStream(): Promise<TestStream> {
  const dir = await mkdtemp(join(tmpdir(), 'hooklog-poll-'));
  const stream = await openEmbeddedStream({ dataDir: dir });
  const topics = topicNames(randomName('poll'));
  await stream.ensureTopics([
    { name: topics.logs, partitions: 2 },
    { name: topics.legacyEvents, partitions: 2 },
    { name: topics.deadletter, partitions: 1 },
    { name: topics.cursors, partitions: 2, compacted: true },
  ]);
  return {
    stream,
    topics,
    close: async () => {
      await stream.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** An org section as a user would write it, parsed and defaulted by the real schema. */
export function orgConfig(sim: SimulatedOrg, org: Record<string, unknown> = {}): OrgConfig {
  const base = {
    id: randomName('org').replaceAll('_', '-'),
    base_url: sim.url,
    auth: { ssws: { token: 'sim-token' } },
    request_timeout_ms: 5_000,
  };
  return parseConfig({ orgs: [{ ...base, ...org }] }, {}).orgs[0]!;
}

/** Reads a topic from the start into memory, for as long as the test runs. */
export class Collector {
  readonly records: ConsumedRecord[] = [];
  #consumer: Consumer | null = null;

  static async start(stream: Stream, topic: string): Promise<Collector> {
    const c = new Collector();
    c.#consumer = await stream.consume({
      topic,
      group: randomName('collect'),
      maxBatchWaitMs: 20,
      handler: async (batch) => void c.records.push(...batch.records),
    });
    return c;
  }

  /** Record values parsed, with their org header. */
  values(): Array<Record<string, unknown>> {
    return this.records.map((r) => JSON.parse(r.value.toString('utf8')) as Record<string, unknown>);
  }

  ids(field: 'uuid' | 'eventId'): string[] {
    return this.values().map((v) => String(v[field]));
  }

  async stop(): Promise<void> {
    await this.#consumer?.stop();
  }
}

/** A logger at debug level whose JSON lines the test can read back. */
export function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return {
    logger: createLogger({ level: 'debug', destination }),
    lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Counts of each value (duplicates show as > 1). */
export function duplicates(ids: readonly string[]): string[] {
  const seen = new Set<string>();
  const dup: string[] = [];
  for (const id of ids) {
    if (seen.has(id)) dup.push(id);
    seen.add(id);
  }
  return dup;
}
