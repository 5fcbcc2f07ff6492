import { appendFileSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { silentLogger } from '../../log.js';
import type { StreamRecord } from '../types.js';
import { openEmbeddedStream } from './index.js';
import { readAll, segmentFiles, tempDirs } from './testing.js';
import { capturingLogger } from '../../../test/simulated-org/harness.js';

const dir = tempDirs();
const open = (dataDir: string, segmentBytes?: number) =>
  openEmbeddedStream({ dataDir, logger: silentLogger(), ...(segmentBytes ? { segmentBytes } : {}) });
const recs = (prefix: string, n: number): StreamRecord[] =>
  Array.from({ length: n }, (_, i) => ({ key: 'k', value: Buffer.from(`${prefix}${i}`), headers: { i: String(i) } }));
const values = async (s: Awaited<ReturnType<typeof open>>, topic: string) =>
  (await readAll(s, topic)).map((r) => r.value.toString());

async function expectCorrupt(p: Promise<unknown>, mentions: string): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HooklogError);
  expect((err as HooklogError).code).toBe('STREAM_CORRUPT');
  expect((err as HooklogError).message).toContain(mentions);
}

/** A log with `appends` appends of 3 records each to topic t; returns the file size after each append. */
async function writeLog(dataDir: string, appends: number, segmentBytes?: number): Promise<number[]> {
  const s = await open(dataDir, segmentBytes);
  await s.ensureTopics([{ name: 't', partitions: 1 }]);
  const sizes: number[] = [];
  for (let a = 0; a < appends; a++) {
    await s.append('t', recs(`a${a}-`, 3));
    sizes.push(statSync(segmentFiles(dataDir).at(-1)!).size);
  }
  await s.close();
  return sizes;
}

describe('embedded log recovery', () => {
  it('cuts a torn final frame, keeps every complete one, and appends after it', async () => {
    const d = dir();
    const sizes = await writeLog(d, 5);
    const seg = segmentFiles(d).at(-1)!;
    truncateSync(seg, sizes[4]! - 3);
    const s = await open(d);
    expect(statSync(seg).size).toBe(sizes[3]);
    expect(await values(s, 't')).toEqual(
      Array.from({ length: 4 }, (_, a) => [0, 1, 2].map((i) => `a${a}-${i}`)).flat(),
    );
    await s.append('t', recs('new', 1));
    await s.close();
    const again = await open(d);
    const all = await readAll(again, 't');
    expect(all.at(-1)).toMatchObject({ offset: 12 });
    expect(all.at(-1)!.value.toString()).toBe('new0');
    await again.close();
  });

  it('drops garbage after the last frame (random bytes, then zeros)', async () => {
    for (const garbage of [
      Buffer.from('\x00\x00\x01\x00 definitely not a frame, but its length fits'),
      Buffer.alloc(4096),
    ]) {
      const d = dir();
      const sizes = await writeLog(d, 3);
      const seg = segmentFiles(d).at(-1)!;
      appendFileSync(seg, garbage);
      const s = await open(d);
      expect(statSync(seg).size).toBe(sizes[2]);
      expect(await values(s, 't')).toHaveLength(9);
      await s.append('t', recs('new', 2));
      expect((await readAll(s, 't')).map((r) => r.offset)).toEqual(Array.from({ length: 11 }, (_, i) => i));
      await s.close();
    }
  });

  it('refuses to open when a segment that is not the newest is damaged and has no sidecar, naming file and byte', async () => {
    const d = dir();
    await writeLog(d, 30, 1024);
    const segs = segmentFiles(d);
    expect(segs.length).toBeGreaterThan(2);
    // Without its sidecar (a log written before them, or the file lost) a sealed segment is read and checked on open.
    rmSync(segs[0]!.replace(/\.seg$/, '.idx'));
    const bytes = readFileSync(segs[0]!);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 20) ^ 0xff, bytes.length - 20);
    writeFileSync(segs[0]!, bytes);
    await expectCorrupt(open(d, 1024), segs[0]!);
    // The failed open released its lock: a second attempt fails the same way, not as "locked".
    await expectCorrupt(open(d, 1024), 'not the newest');
    expect(readFileSync(segs[0]!)).toEqual(bytes);
  });

  it('opens a large log reading only its newest sealed and active segments; damage elsewhere is found by the reader that reaches it', async () => {
    const d = dir();
    await writeLog(d, 60, 1024);
    const segs = segmentFiles(d);
    expect(segs.length).toBeGreaterThan(8);
    const bytes = readFileSync(segs[1]!);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 20) ^ 0xff, bytes.length - 20);
    writeFileSync(segs[1]!, bytes);
    const { logger, lines } = capturingLogger();
    const s = await openEmbeddedStream({ dataDir: d, logger, segmentBytes: 1024 });
    try {
      expect(lines().find((l) => l.msg === 'embedded log opened')).toMatchObject({ segments: segs.length, read: 2 });
      expect(s.endOffsets('t')).toEqual(new Map([[0, 180]]));
      await s.append('t', recs('new', 1));
      expect(s.endOffsets('t').get(0)).toBe(181);
      // Reading through the damaged segment fails loudly, naming it; nothing is skipped.
      await expectCorrupt(s.readLatestByKey('t'), segs[1]!);
    } finally {
      await s.close();
    }
  });

  it("reads a compacted topic's latest keys from the newest snapshot on, not from the oldest retained record", async () => {
    const d = dir();
    const s = await open(d, 1024);
    await s.ensureTopics([
      { name: 'cursors', partitions: 1, compacted: true },
      { name: 't', partitions: 1 },
    ]);
    await s.append('cursors', [
      { key: 'org1', value: Buffer.from('c1'), headers: {} },
      { key: 'org2', value: Buffer.from('c1'), headers: {} },
    ]);
    for (let a = 0; a < 40; a++) await s.append('t', recs(`a${a}-`, 3));
    await s.append('cursors', [{ key: 'org1', value: Buffer.from('c2'), headers: {} }]);
    for (let a = 40; a < 60; a++) await s.append('t', recs(`a${a}-`, 3));
    await s.close();
    const segs = segmentFiles(d);
    expect(segs.length).toBeGreaterThan(8);
    // Damage the segment holding the first cursor records: a read from the oldest record would meet it.
    const bytes = readFileSync(segs[0]!);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 20) ^ 0xff, bytes.length - 20);
    writeFileSync(segs[0]!, bytes);
    const r = await open(d, 1024);
    try {
      const latest = await r.readLatestByKey('cursors');
      expect([...latest].map(([k, v]) => [k, v.value.toString()]).sort()).toEqual([
        ['org1', 'c2'],
        ['org2', 'c1'],
      ]);
    } finally {
      await r.close();
    }
  });

  it('refuses to truncate acknowledged frames that follow damage in the newest segment', async () => {
    const d = dir();
    const sizes = await writeLog(d, 5);
    const seg = segmentFiles(d).at(-1)!;
    const bytes = readFileSync(seg);
    // inside the third append's frame, two complete frames after it
    bytes.writeUInt8(bytes.readUInt8(sizes[1]! + 12) ^ 0x01, sizes[1]! + 12);
    writeFileSync(seg, bytes);
    await expectCorrupt(open(d), 'acknowledged data is damaged');
    expect(statSync(seg).size).toBe(sizes[4]);
  });

  it('refuses to open when a segment in the middle is missing', async () => {
    const d = dir();
    await writeLog(d, 30, 1024);
    const segs = segmentFiles(d);
    unlinkSync(segs[1]!);
    await expectCorrupt(open(d, 1024), segs[2]!);
  });
});

describe('atomic appends', () => {
  it('are all or nothing when the frame is cut anywhere', async () => {
    for (const cut of [1, 8, 0.5, -1]) {
      const d = dir();
      const s = await open(d);
      await s.ensureTopics([
        { name: 'a', partitions: 1 },
        { name: 'b', partitions: 2, compacted: true },
      ]);
      await s.append('a', recs('before', 1));
      const seg = segmentFiles(d).at(-1)!;
      const start = statSync(seg).size;
      await s.appendAtomically([
        { topic: 'a', records: recs('atomic-a', 50) },
        { topic: 'b', records: recs('atomic-b', 50) },
      ]);
      const end = statSync(seg).size;
      await s.close();
      truncateSync(seg, cut === 0.5 ? start + Math.floor((end - start) / 2) : cut > 0 ? start + cut : end + cut);

      const r = await open(d);
      expect(await values(r, 'a')).toEqual(['before0']);
      expect([...r.endOffsets('b').values()]).toEqual([0, 0]);
      expect((await r.readLatestByKey('b')).size).toBe(0);
      await r.appendAtomically([
        { topic: 'a', records: recs('after-a', 1) },
        { topic: 'b', records: recs('after-b', 1) },
      ]);
      expect(await values(r, 'a')).toEqual(['before0', 'after-a0']);
      expect((await r.readLatestByKey('b')).get('k')?.value.toString()).toBe('after-b0');
      await r.close();
    }
  });
});
