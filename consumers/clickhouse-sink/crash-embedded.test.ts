/**
 * Crash injection between insert and commit on the embedded log with real
 * chdb (crash-replay.fixture.ts): 50+ crash points drawn from a seeded PRNG,
 * batches cut by time and size of varying length. Afterwards the raw rows
 * (no FINAL, merges stopped) are exactly the records appended, once each, and
 * so are the arrivals rows the events table's view wrote (one copy each).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomName } from '../../test/support/wait.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { crashReplay } from './crash-replay.fixture.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-crash-'));
let store: Store;
let stream: EmbeddedStream;

beforeAll(async () => {
  store = openStore({ database: randomName('crash'), dataDir, logger: log });
  await migrate(store, log);
  stream = await openEmbeddedStream({ dataDir, logger: log });
}, 60_000);

afterAll(async () => {
  await stream?.close();
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('sink crash between insert and commit (embedded log + chdb)', () => {
  it('replays every crashed batch as the same insert: raw rows equal the records, each once, and so do their arrivals', async () => {
    const seed = 0x5eed12;
    const r = await crashReplay({ stream, store, logger: log, seed, crashes: 60, partitions: 3 });
    expect(r.crashes).toBeGreaterThanOrEqual(50);
    expect(r.committed).toBe(r.appended);
    expect(r.missing).toBe(0);
    expect(r.unexpected).toBe(0);
    expect(r.distinctUuids).toBe(r.appended);
    expect(r.rawRows, `seed ${seed}: ${JSON.stringify(r)}`).toBe(r.appended);
    // One arrival per record, one copy each: a replayed insert added none in the view's table either.
    expect(r.arrivalRows, `seed ${seed}: ${JSON.stringify(r)}`).toBe(r.appended);
    expect(r.arrivalCopies).toBe(r.appended);
  }, 300_000);
});
