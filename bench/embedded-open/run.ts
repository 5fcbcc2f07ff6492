/**
 * Embedded log start-up bench (not part of `npm test`), issue 15's "a 1 GiB embedded log opens in under 1 s":
 *
 *   npx tsx bench/embedded-open/run.ts [--mib 1024] [--runs 5] [--unconsumed 10000] [--segment-mib 64]
 *   npm run bench:embedded-open -- --mib 1024 --runs 5
 *
 * Untimed set-up: a log in a fresh directory gets --mib MiB of event JSON (more on disk, with headers and
 * frames): the pipeline bench's generated workload (full LogEvents of about 1.6 KiB, hook headers, 20 org
 * keys) on a 4-partition logs topic, appended in 500-record batches; a consumer group (the sink's, in
 * effect) commits all of it, then --unconsumed more records are appended; the log is closed.
 *
 * Then per run, timed, each figure against baselines measured in the same run:
 *   open                  openEmbeddedStream on the full log (lock, sidecars, reading the newest segments)
 *   first batch           consume() by the group to its first batch handed over (seek to the committed
 *                         position, read, cut); the handler refuses that batch, so nothing is committed
 *                         and every run starts from the same position
 *   first append          one record appended (fsynced) to the reopened log
 *   baseline: empty open  openEmbeddedStream on an empty directory: what opening costs with nothing in it
 *   baseline: read bytes  reading every segment file's bytes once, sequentially (1 MiB reads): what an
 *                         open that read the whole log would at least cost
 * Both opens run with the files in the page cache (the set-up wrote them; the byte read precedes them).
 * Prints medians of --runs with min/max, the ratios, what open read, and the 1-minute load average
 * before and after. Figures are only valid on a machine doing nothing else.
 */
import { mkdtemp, open, readdir, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { waitFor } from '../../test/support/wait.js';
import { batches, buildWorkload } from '../pipeline/events.js';
import { formatTable } from '../pipeline/stats.js';

const { values: args } = parseArgs({
  options: {
    mib: { type: 'string', default: '1024' },
    runs: { type: 'string', default: '5' },
    unconsumed: { type: 'string', default: '10000' },
    'segment-mib': { type: 'string', default: '64' },
  },
  strict: true,
});
const MIB = positive('mib', args.mib);
const RUNS = positive('runs', args.runs);
const UNCONSUMED = positive('unconsumed', args.unconsumed);
const SEGMENT_BYTES = positive('segment-mib', args['segment-mib']) * 2 ** 20;
const TOPIC = 'bench.logs';
const GROUP = 'bench.sink';
const PARTITIONS = 4;
/** Distinct events generated; the fill repeats them (the log does not deduplicate, and reading does not care). */
const POOL = 20_000;

function positive(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
}

const say = (msg: string) => process.stderr.write(`${msg}\n`);
const open_ = (dataDir: string) => openEmbeddedStream({ dataDir, segmentBytes: SEGMENT_BYTES });

/** Appends records from the pool, 4 appends of up to 500 in flight, until about `bytes` of values or `records`. */
async function fill(stream: Stream, bytes: number, records: number): Promise<number> {
  const pool = buildWorkload(POOL);
  const target = Math.min(records, Math.ceil(bytes / (pool.bytes / POOL)));
  const queue = batches(pool.records, 500);
  let sent = 0;
  let i = 0;
  const worker = async () => {
    while (sent < target) {
      const batch = queue[i++ % queue.length]!.slice(0, target - sent);
      sent += batch.length;
      await stream.append(TOPIC, batch);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return sent;
}

/** Commits the group's position at the end of what is in the topic now, by consuming it (untimed). */
async function consumeAll(stream: Stream, total: number): Promise<void> {
  let seen = 0;
  const c = await stream.consume({
    topic: TOPIC,
    group: GROUP,
    maxBatchRecords: 5000,
    maxBatchWaitMs: 10,
    handler: async (b) => void (seen += b.records.length),
  });
  await waitFor(() => seen, {
    until: (v) => v >= total,
    timeoutMs: 3_600_000,
    intervalMs: 50,
    what: 'the fill consumed',
  });
  await c.stop();
}

async function segmentFiles(dir: string): Promise<{ files: string[]; sidecars: number }> {
  const names = await readdir(dir);
  return {
    files: names
      .filter((n) => n.endsWith('.seg'))
      .sort()
      .map((n) => join(dir, n)),
    sidecars: names.filter((n) => n.endsWith('.idx')).length,
  };
}

/** Baseline: every segment's bytes, read once in order. */
async function readBytes(files: readonly string[]): Promise<number> {
  const buf = Buffer.allocUnsafe(2 ** 20);
  const t0 = performance.now();
  for (const f of files) {
    const fh = await open(f, 'r');
    try {
      while ((await fh.read(buf, 0, buf.length, null)).bytesRead > 0);
    } finally {
      await fh.close();
    }
  }
  return performance.now() - t0;
}

interface Run {
  open: number;
  firstBatch: number;
  firstAppend: number;
  emptyOpen: number;
  readBytes: number;
}

async function measure(dataDir: string, files: readonly string[], committed: readonly number[]): Promise<Run> {
  const readMs = await readBytes(files);

  const emptyDir = await mkdtemp(join(tmpdir(), 'hooklog-bench-open-empty-'));
  let t0 = performance.now();
  const empty = await open_(emptyDir);
  const emptyOpen = performance.now() - t0;
  await empty.close();
  await rm(emptyDir, { recursive: true, force: true });

  t0 = performance.now();
  const stream = await open_(dataDir);
  const openMs = performance.now() - t0;
  try {
    let firstBatchAt = 0;
    let first = { partition: -1, offset: -1 };
    t0 = performance.now();
    const c = await stream.consume({
      topic: TOPIC,
      group: GROUP,
      maxBatchRecords: 5000,
      maxBatchWaitMs: 1000,
      // Refused: the group's position stays where the set-up left it, for the next run.
      handler: async (b) => {
        if (firstBatchAt === 0) {
          firstBatchAt = performance.now();
          first = { partition: b.partition, offset: b.firstOffset };
        }
        throw new Error('bench: not committing');
      },
    });
    await waitFor(() => firstBatchAt, {
      until: (n) => n > 0,
      timeoutMs: 600_000,
      intervalMs: 1,
      what: 'the first batch',
    });
    const firstBatch = firstBatchAt - t0;
    await c.stop();
    // A batch from below the committed position would mean the group's position was lost or ignored.
    if (first.offset !== committed[first.partition])
      throw new Error(`first batch began at ${first.partition}/${first.offset}, committed ${committed.join(',')}`);

    t0 = performance.now();
    await stream.append('bench.probe', [{ key: 'k', value: Buffer.from('probe'), headers: {} }]);
    const firstAppend = performance.now() - t0;
    return { open: openMs, firstBatch, firstAppend, emptyOpen, readBytes: readMs };
  } finally {
    await stream.close();
  }
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const dataDir = await mkdtemp(join(tmpdir(), 'hooklog-bench-open-'));
  try {
    let t = performance.now();
    const stream = await open_(dataDir);
    await stream.ensureTopics([
      { name: TOPIC, partitions: PARTITIONS },
      { name: 'bench.probe', partitions: 1 },
    ]);
    const consumed = await fill(stream, MIB * 2 ** 20, Infinity);
    await consumeAll(stream, consumed);
    const tail = await fill(stream, Infinity, UNCONSUMED);
    await stream.close();
    const committed = await committedOf(dataDir);
    const { files, sidecars } = await segmentFiles(join(dataDir, 'stream'));
    const { sizes, total } = await sizesOf(files);
    say(
      `set-up: ${consumed + tail} records (${consumed} committed by ${GROUP}, ${tail} not) in ${files.length} segments ` +
        `of up to ${SEGMENT_BYTES / 2 ** 20} MiB, ${(total / 2 ** 20).toFixed(0)} MiB, ${sidecars} sidecars; ` +
        `${Math.round((performance.now() - t) / 1000)} s; ${cpus().length} CPUs`,
    );
    say(
      `open reads the segments from the newest sealed one on: ${files.length >= 2 ? 2 : 1} files, ` +
        `${((sizes.at(-1)! + (sizes.at(-2) ?? 0)) / 2 ** 20).toFixed(1)} MiB`,
    );

    const runs: Run[] = [];
    for (let run = 1; run <= RUNS; run++) {
      t = performance.now();
      const r = await measure(dataDir, files, committed);
      runs.push(r);
      say(
        `run ${run}/${RUNS}: open ${r.open.toFixed(1)} ms, first batch ${r.firstBatch.toFixed(1)} ms, ` +
          `first append ${r.firstAppend.toFixed(1)} ms; empty open ${r.emptyOpen.toFixed(1)} ms, ` +
          `read bytes ${r.readBytes.toFixed(1)} ms`,
      );
    }
    const col = (f: (r: Run) => number) => runs.map(f);
    const out = (text: string) => process.stdout.write(`${text}\n`);
    out(
      `\n${(total / 2 ** 20).toFixed(0)} MiB embedded log, ${files.length} segments, ${tail} records unconsumed; ` +
        `${RUNS} runs, ${cpus().length} CPUs; 1-minute load average ${loadBefore.toFixed(2)} before, ` +
        `${loadavg()[0]!.toFixed(2)} after\n`,
    );
    out('milliseconds (lower is better); ratios are median / median\n');
    const baselines = ['baseline: empty open', 'baseline: read bytes'];
    out(
      formatTable(
        [
          { mode: 'open', rates: col((r) => r.open), compare: true },
          { mode: 'first batch after open', rates: col((r) => r.firstBatch), compare: true },
          { mode: 'first append after open', rates: col((r) => r.firstAppend), compare: true },
          { mode: baselines[0]!, rates: col((r) => r.emptyOpen), compare: true },
          { mode: baselines[1]!, rates: col((r) => r.readBytes), compare: true },
        ],
        baselines,
        'ms',
        1,
      ),
    );
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The group's committed positions, read back from the closed log (opened once more, untimed). */
async function committedOf(dataDir: string): Promise<number[]> {
  const stream = await open_(dataDir);
  try {
    const committed = await stream.committedOffsets(TOPIC, GROUP);
    return Array.from({ length: PARTITIONS }, (_, p) => committed.get(p) ?? 0);
  } finally {
    await stream.close();
  }
}

async function sizesOf(files: readonly string[]): Promise<{ sizes: number[]; total: number }> {
  const sizes: number[] = [];
  for (const f of files) {
    const fh = await open(f, 'r');
    sizes.push((await fh.stat()).size);
    await fh.close();
  }
  return { sizes, total: sizes.reduce((a, b) => a + b, 0) };
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    say(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
