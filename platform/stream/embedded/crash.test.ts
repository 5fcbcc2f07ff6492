import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { silentLogger } from '../../log.js';
import { openEmbeddedStream } from './index.js';
import { freshDir, readAll, segmentFiles } from './testing.js';

const dataDir = freshDir();
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const child = fileURLToPath(new URL('./crash-writer.fixture.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs the writer until it acknowledged at least `minAcks` appends, then SIGKILLs it; returns what it acknowledged. */
async function runAndKill(tag: string, minAcks: number): Promise<{ plain: string[]; atomic: string[] }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, dataDir, tag], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)));
  const acks = () => out.split('\n').filter((l) => l.startsWith('ack ')).length;
  try {
    await waitFor(() => acks() >= minAcks || proc.exitCode !== null, {
      timeoutMs: 30_000,
      what: `${minAcks} acks`,
      seen: () => ({ 'acks()': acks(), 'proc.exitCode': proc.exitCode }),
    });
  } finally {
    proc.kill('SIGKILL');
  }
  expect(await exited, `writer must die by our SIGKILL, not on its own: ${err}`).toBe('SIGKILL');
  const acked = { plain: [] as string[], atomic: [] as string[] };
  // Only whole lines: a line cut by the kill is not an acknowledgement we saw.
  for (const line of out.split('\n').slice(0, -1)) {
    const [word, kind, ids] = line.split(' ');
    if (word === 'ack') acked[kind as 'plain' | 'atomic'].push(...ids!.split(','));
  }
  return acked;
}

describe('kill -9 of a process appending to the embedded log', () => {
  it('loses no acknowledged record and duplicates none, three kills in a row', async () => {
    const everAcked: string[] = [];
    const everAtomic: string[] = [];
    for (const round of ['r1', 'r2', 'r3']) {
      const acked = await runAndKill(round, 60);
      expect(acked.plain.length + acked.atomic.length).toBeGreaterThanOrEqual(60);
      everAcked.push(...acked.plain, ...acked.atomic);
      everAtomic.push(...acked.atomic);

      const s = await openEmbeddedStream({ dataDir, logger: silentLogger() });
      try {
        const crash = (await readAll(s, 'crash')).map((r) => r.value.toString());
        const pair = (await readAll(s, 'crash-pair')).map((r) => r.value.toString());
        const counts = new Map<string, number>();
        for (const id of crash) counts.set(id, (counts.get(id) ?? 0) + 1);
        for (const id of everAcked) expect(counts.get(id), `acknowledged ${id}`).toBe(1);
        expect(counts.size, 'no record appears twice').toBe(crash.length);
        expect(new Set(pair).size).toBe(pair.length);
        for (const id of everAtomic) expect(pair).toContain(id);
        // An atomic append is visible in both topics or in neither, acknowledged or not.
        const inCrash = new Set(crash);
        for (const id of pair) expect(inCrash.has(id), `atomic ${id} in both topics`).toBe(true);
        const pairSet = new Set(pair);
        const atomicIds = crash.filter((id) => Number(id.split('-')[2]) % 3 === 0);
        for (const id of atomicIds) expect(pairSet.has(id), `atomic ${id} in both topics`).toBe(true);
      } finally {
        await s.close();
      }
    }
    expect(segmentFiles(dataDir).length).toBeGreaterThan(1);
  }, 90_000);
});
