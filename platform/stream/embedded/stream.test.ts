import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { HooklogError } from '../../errors.js';
import { capturingLogger } from '../../../test/simulated-org/harness.js';
import { silentLogger } from '../../log.js';
import type { StreamRecord } from '../types.js';
import type { EmbeddedConsumer } from './consumer.js';
import { openEmbeddedStream } from './index.js';
import { readAll, tempDirs } from './testing.js';

const dir = tempDirs();
const open = (dataDir: string, lockWaitMs = 300) => openEmbeddedStream({ dataDir, logger: silentLogger(), lockWaitMs });
const rec = (key: string | null, value: string): StreamRecord => ({ key, value: Buffer.from(value), headers: {} });

async function rejection(p: Promise<unknown>): Promise<HooklogError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HooklogError);
  return err as HooklogError;
}

describe('group commit', () => {
  it('shares one write+fsync among concurrent appends, and every append lands once', async () => {
    const s = await open(dir());
    await s.ensureTopics([{ name: 't', partitions: 4 }]);

    const seq0 = s.fsyncCount;
    for (let i = 0; i < 5; i++) await s.append('t', [rec(`s${i}`, `seq-${i}`)]);
    expect(s.fsyncCount - seq0).toBe(5); // one sync per sequential append: the counter counts

    const before = s.fsyncCount;
    await Promise.all(Array.from({ length: 300 }, (_, i) => s.append('t', [rec(`k${i}`, `c-${i}`)])));
    const syncs = s.fsyncCount - before;
    expect(syncs).toBeGreaterThan(0);
    expect(syncs).toBeLessThan(30);

    const all = await readAll(s, 't');
    expect(all).toHaveLength(305);
    expect(new Set(all.map((r) => r.value.toString())).size).toBe(305);
    for (const [p, end] of s.endOffsets('t')) {
      expect(all.filter((r) => r.partition === p).map((r) => r.offset)).toEqual(
        Array.from({ length: end }, (_, i) => i),
      );
    }
    await s.close();
  });
});

describe('embedded stream API', () => {
  it('refuses a second live consumer of a group, and allows it after stop', async () => {
    const s = await open(dir());
    await s.ensureTopics([{ name: 't', partitions: 2 }]);
    const handler = async () => undefined;
    const c1 = await s.consume({ topic: 't', group: 'g', handler });
    expect((await rejection(s.consume({ topic: 't', group: 'g', handler }))).message).toContain(
      'already has a live consumer',
    );
    const other = await s.consume({ topic: 't', group: 'other', handler });
    await c1.stop();
    const c2 = await s.consume({ topic: 't', group: 'g', handler });
    await Promise.all([c2.stop(), other.stop()]);
    await s.close();
  });

  it('rejects unknown topics, bad names and bad records; keeps existing topics as they are', async () => {
    const s = await open(dir());
    expect((await rejection(s.append('nope', [rec('k', 'v')]))).code).toBe('STREAM_APPEND_FAILED');
    expect((await rejection(s.ensureTopics([{ name: '__offsets', partitions: 1 }]))).code).toBe('RECORD_INVALID');
    expect((await rejection(s.ensureTopics([{ name: 'has space', partitions: 1 }]))).code).toBe('RECORD_INVALID');
    await s.ensureTopics([{ name: 't', partitions: 3 }]);
    await s.ensureTopics([{ name: 't', partitions: 5 }]);
    expect(s.endOffsets('t').size).toBe(3);
    expect((await rejection(s.append('t', [{ key: 'k', value: 'str' as unknown as Buffer, headers: {} }]))).code).toBe(
      'RECORD_INVALID',
    );
    expect(await s.readLatestByKey('nope')).toEqual(new Map());
    // Keyless records go round robin.
    await s.append('t', [rec(null, 'a'), rec(null, 'b'), rec(null, 'c')]);
    expect([...s.endOffsets('t').values()]).toEqual([1, 1, 1]);
    await s.ping();
    await s.close();
    expect((await rejection(s.ping())).code).toBe('STREAM_CLOSED');
    expect((await rejection(s.append('t', [rec('k', 'v')]))).code).toBe('STREAM_CLOSED');
  });

  it('stops reading a partition while its worker is paused, and resumes', async () => {
    const s = await open(dir());
    await s.ensureTopics([{ name: 't', partitions: 1 }]);
    for (let i = 0; i < 50; i++)
      await s.append(
        't',
        Array.from({ length: 10 }, (_, j) => rec('k', String(i * 10 + j))),
      );
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const seen: number[] = [];
    const c = (await s.consume({
      topic: 't',
      group: 'g',
      maxBatchRecords: 10,
      maxBatchWaitMs: 5,
      maxBufferedRecords: 20,
      handler: async (b) => {
        seen.push(...b.records.map((r) => r.offset));
        await gate;
      },
    })) as EmbeddedConsumer;
    await waitFor(() => seen.length === 10 && c.bufferedRecords >= 20, {
      what: 'handler blocked, buffer full',
      seen: () => ({ 'seen.length': seen.length, 'c.bufferedRecords': c.bufferedRecords }),
    });
    // The handler is stuck and the log holds 490 more records: a reader that
    // ignored the pause would buffer them all. Sample the buffer for a while.
    let most = 0;
    for (let i = 0; i < 20; i++) {
      most = Math.max(most, c.bufferedRecords);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(most).toBeLessThanOrEqual(20 + 10 + 10); // limit + one read + one frame
    release();
    await waitFor(() => seen.length, { until: (n) => n === 500, what: 'all records after resume' });
    expect(seen).toEqual(Array.from({ length: 500 }, (_, i) => i));
    await c.stop();
    await s.close();
  });
});

describe('process lock', () => {
  it('refuses a second open of the same log in this process, and reopens after close', async () => {
    const d = dir();
    const s1 = await open(d);
    expect((await rejection(open(d))).message).toContain('already open in this process');
    await s1.close();
    const s2 = await open(d);
    await s2.close();
  });

  it('waits for a live owner and takes its lock over as soon as it is killed', async () => {
    const d = dir();
    await (await open(d)).close();
    const lock = join(d, 'stream', 'LOCK');
    const owner = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    writeFileSync(lock, `${owner.pid}\n`);
    let opened = false;
    const { logger, lines } = capturingLogger();
    const opening = openEmbeddedStream({ dataDir: d, logger, lockWaitMs: 20_000 }).then((s) => {
      opened = true;
      return s;
    });
    await waitFor(() => lines(), {
      until: (got) => got.some((l) => String(l.msg).includes('waiting for it to exit')),
      what: 'the opener to wait',
    });
    expect(opened).toBe(false);
    const killedAt = Date.now();
    owner.kill('SIGKILL');
    const s = await opening;
    expect(Date.now() - killedAt).toBeLessThan(2_000);
    expect(readFileSync(lock, 'utf8').trim()).toBe(String(process.pid));
    await s.close();
  });

  it("refuses a log locked by a live process and takes over a dead one's lock", async () => {
    const d = dir();
    await (await open(d)).close();
    const lock = join(d, 'stream', 'LOCK');
    const sleeper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      writeFileSync(lock, `${sleeper.pid}\n`);
      const err = await rejection(open(d));
      expect(err.code).toBe('STREAM_UNAVAILABLE');
      expect(err.message).toContain(String(sleeper.pid));
    } finally {
      sleeper.kill('SIGKILL');
    }
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(lock, `${dead}\n`);
    const s = await open(d);
    expect(readFileSync(lock, 'utf8').trim()).toBe(String(process.pid));
    await s.close();
  });
});
