import { copyFileSync, mkdirSync, rmSync, truncateSync, utimesSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { silentLogger } from '../../log.js';
import type { ConsumedRecord, StreamRecord } from '../types.js';
import { openEmbeddedStream } from './index.js';
import { freshDir, readAll, segmentFiles } from './testing.js';

const dataDir = freshDir();
const youngDir = freshDir();
const heldDir = freshDir();
const copyDir = freshDir();
afterAll(() => [dataDir, youngDir, heldDir, copyDir].forEach((d) => rmSync(d, { recursive: true, force: true })));
const open = (dir = dataDir) => openEmbeddedStream({ dataDir: dir, segmentBytes: 1024, logger: silentLogger() });
const events = (from: number, n: number): StreamRecord[] =>
  Array.from({ length: n }, (_, i) => ({
    key: `org${(from + i) % 3}`,
    value: Buffer.from(`event-${from + i}-${'x'.repeat(60)}`),
    headers: {},
  }));
const cursor = (org: string, v: string): StreamRecord => ({
  key: org,
  value: Buffer.from(v),
  headers: { 'hooklog-org': org },
});
const DAY = 24 * 3_600_000;

/** Rolls at least `segments` new segments with records of an unrelated topic. */
async function fill(s: Awaited<ReturnType<typeof open>>, segments: number): Promise<void> {
  await s.ensureTopics([{ name: 'filler', partitions: 1 }]);
  const target = segmentFiles(dataDir).length + segments;
  while (segmentFiles(dataDir).length < target)
    await s.append('filler', [{ key: null, value: Buffer.alloc(300), headers: {} }]);
}

describe('segment roll and retention', () => {
  it('deletes old segments but keeps offsets, topic metadata, compacted keys and offset numbering', async () => {
    const s1 = await open();
    await s1.ensureTopics([
      { name: 'events', partitions: 2 },
      { name: 'cursors', partitions: 2, compacted: true },
    ]);
    await s1.append('cursors', [cursor('org1', 'c1'), cursor('org2', 'c1')]);
    for (let i = 0; i < 40; i += 2) await s1.append('events', events(i, 2));
    await s1.append('cursors', [cursor('org1', 'c2')]);
    const ends = s1.endOffsets('events');
    expect([...ends.values()].reduce((a, b) => a + b)).toBe(40);
    expect([...ends.values()].every((n) => n > 0)).toBe(true);

    const consumed: ConsumedRecord[] = [];
    const c = await s1.consume({
      topic: 'events',
      group: 'sink',
      maxBatchWaitMs: 5,
      handler: async (b) => void consumed.push(...b.records),
    });
    await waitFor(
      async () => {
        const committed = await s1.committedOffsets('events', 'sink');
        return [...ends].map(([p, end]) => ({ partition: p, end, committed: committed.get(p) ?? 0 }));
      },
      { until: (parts) => parts.every((x) => x.committed === x.end), what: 'sink caught up' },
    );
    await c.stop();
    // More segments after the commits, so the commit records themselves age out.
    await fill(s1, 3);
    await s1.close();

    const before = segmentFiles(dataDir);
    expect(before.length).toBeGreaterThan(4);
    const old = new Date(Date.now() - 10 * DAY);
    for (const f of before) utimesSync(f, old, old);

    // Retention runs on open (after replaying the old segments): everything
    // before the newest snapshot goes. Reopen once more to see only what survived.
    await (await open()).close();
    const s2 = await open();
    const after = segmentFiles(dataDir);
    expect(after).toEqual([before.at(-1)]);
    expect(await s2.committedOffsets('events', 'sink')).toEqual(ends);
    expect(s2.endOffsets('events')).toEqual(ends);
    const latest = await s2.readLatestByKey('cursors');
    expect([...latest].map(([k, r]) => [k, r.value.toString(), r.headers['hooklog-org']]).sort()).toEqual([
      ['org1', 'c2', 'org1'],
      ['org2', 'c1', 'org2'],
    ]);

    // New records continue the numbering, and the group resumes exactly at them.
    await s2.append('events', events(100, 4));
    const resumed: ConsumedRecord[] = [];
    const c2 = await s2.consume({
      topic: 'events',
      group: 'sink',
      maxBatchWaitMs: 5,
      handler: async (b) => void resumed.push(...b.records),
    });
    await waitFor(() => resumed.length, { until: (n) => n === 4, what: 'records after retention' });
    for (const r of resumed) expect(r.offset).toBeGreaterThanOrEqual(ends.get(r.partition)!);
    expect(resumed.map((r) => r.value.toString().split('-')[1]).sort()).toEqual(['100', '101', '102', '103']);
    // A new group finds only what was retained: the old events are gone.
    expect((await readAll(s2, 'events')).map((r) => r.value.toString().split('-')[1]).sort()).toEqual([
      '100',
      '101',
      '102',
      '103',
    ]);

    // Retention on a running log, with a consumer live: roll more segments, then age them out.
    for (let i = 200; i < 240; i += 2) await s2.append('events', events(i, 2));
    await s2.append('cursors', [cursor('org3', 'c1')]);
    await waitFor(() => resumed.length, { until: (n) => n === 44, what: 'live consumer caught up' });
    await fill(s2, 3);
    expect(segmentFiles(dataDir).length).toBeGreaterThan(3);
    const deleted = await s2.enforceRetention(Date.now() + 10 * DAY);
    expect(deleted).toBeGreaterThan(2);
    expect(segmentFiles(dataDir)).toHaveLength(1);
    await s2.append('events', events(300, 4));
    await waitFor(() => resumed.length, { until: (n) => n === 48, what: 'live consumer across retention' });
    expect(
      resumed
        .map((r) => r.value.toString().split('-')[1])
        .slice(-4)
        .sort(),
    ).toEqual(['300', '301', '302', '303']);
    expect((await s2.readLatestByKey('cursors')).size).toBe(3);
    await c2.stop();
    const committed = await s2.committedOffsets('events', 'sink');
    expect([...committed.values()].reduce((a, b) => a + b)).toBe(48 + 40);
    // Age out the segments holding those commits too.
    await fill(s2, 2);
    expect(await s2.enforceRetention(Date.now() + 10 * DAY)).toBeGreaterThan(0);
    await s2.close();

    const s3 = await open();
    expect(await s3.committedOffsets('events', 'sink')).toEqual(committed);
    expect(s3.endOffsets('events')).toEqual(committed);
    expect([...(await s3.readLatestByKey('cursors')).keys()].sort()).toEqual(['org1', 'org2', 'org3']);
    await s3.close();
  });

  it('restates at every roll the compacted keys written since the first one, values as appended', async () => {
    const dir = freshDir();
    try {
      const s = await openEmbeddedStream({ dataDir: dir, segmentBytes: 1024, logger: silentLogger() });
      await s.ensureTopics([
        { name: 'cursors', partitions: 2, compacted: true },
        { name: 'filler', partitions: 1 },
      ]);
      const rollAfter = async (n: number) => {
        const target = segmentFiles(dir).length + n;
        while (segmentFiles(dir).length < target)
          await s.append('filler', [{ key: null, value: Buffer.alloc(300), headers: {} }]);
      };
      await s.append('cursors', [cursor('org1', 'c1'), cursor('org2', 'c1')]);
      await rollAfter(2);
      // A value handed over as a view of a larger buffer that is changed afterwards: stored as appended.
      const shared = Buffer.from('c2-and-more');
      await s.append('cursors', [{ ...cursor('org1', 'x'), value: shared.subarray(0, 2) }]);
      shared.write('zz');
      await rollAfter(2);
      await s.append('cursors', [cursor('org3', 'c1'), cursor('org2', 'c3')]);
      await rollAfter(2);
      expect(await s.enforceRetention(Date.now() + 10 * DAY)).toBeGreaterThan(0);
      await s.close();

      const r = await openEmbeddedStream({ dataDir: dir, segmentBytes: 1024, logger: silentLogger() });
      const latest = await r.readLatestByKey('cursors');
      expect([...latest].map(([k, v]) => [k, v.value.toString(), v.headers['hooklog-org']]).sort()).toEqual([
        ['org1', 'c2', 'org1'],
        ['org2', 'c3', 'org2'],
        ['org3', 'c1', 'org3'],
      ]);
      await r.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps segments younger than the retention (default 168 hours)', async () => {
    const s = await open(youngDir);
    await s.ensureTopics([{ name: 'young', partitions: 1 }]);
    for (let i = 0; i < 30; i += 2) await s.append('young', events(i, 2));
    const files = segmentFiles(youngDir);
    expect(files.length).toBeGreaterThan(2);
    expect(await s.enforceRetention()).toBe(0);
    expect(await s.enforceRetention(Date.now() + 6 * DAY)).toBe(0);
    expect(segmentFiles(youngDir)).toEqual(files);
    expect(await s.enforceRetention(Date.now() + 8 * DAY)).toBe(files.length - 1);
    await s.close();
  });

  it('a backup hold keeps every segment through retention, and its lengths open as the log of that moment', async () => {
    const s = await openEmbeddedStream({ dataDir: heldDir, segmentBytes: 1024, logger: silentLogger() });
    await s.ensureTopics([{ name: 'held', partitions: 1 }]);
    for (let i = 0; i < 30; i += 2) await s.append('held', events(i, 2));
    const hold = s.holdSegments();
    expect(hold.segments.map((x) => x.path)).toEqual(segmentFiles(heldDir));
    // Appends go on past the hold; retention, however overdue, deletes nothing while it lasts.
    for (let i = 30; i < 40; i += 2) await s.append('held', events(i, 2));
    expect(await s.enforceRetention(Date.now() + 30 * DAY)).toBe(0);
    for (const x of hold.segments) {
      mkdirSync(join(copyDir, 'stream'), { recursive: true });
      const to = join(copyDir, 'stream', basename(x.path));
      copyFileSync(x.path, to);
      truncateSync(to, x.size);
    }
    hold.release();
    expect(await s.enforceRetention(Date.now() + 30 * DAY)).toBeGreaterThan(0);
    await s.close();
    const copy = await openEmbeddedStream({ dataDir: copyDir, segmentBytes: 1024, logger: silentLogger() });
    try {
      expect(copy.endOffsets('held')).toEqual(new Map([[0, 30]]));
      expect((await readAll(copy, 'held')).map((r) => r.value.toString())).toEqual(
        events(0, 30).map((r) => r.value.toString()),
      );
    } finally {
      await copy.close();
    }
  });
});
