/**
 * Child process for crash.test.ts: appends to the embedded log as fast as it
 * can from several concurrent writers, and prints `ack <ids>` for each append
 * only after it resolved. The parent SIGKILLs it at an arbitrary moment.
 * Usage: node --import tsx crash-writer.fixture.ts <dataDir> <runTag>
 */
import { silentLogger } from '../../log.js';
import type { StreamRecord } from '../types.js';
import { openEmbeddedStream } from './index.js';

const [dataDir, tag] = process.argv.slice(2);
if (!dataDir || !tag) throw new Error('usage: crash-writer.fixture.ts <dataDir> <runTag>');

// Small segments, so kills also land around segment rolls and their snapshots.
const stream = await openEmbeddedStream({ dataDir, segmentBytes: 8 * 1024, logger: silentLogger() });
await stream.ensureTopics([
  { name: 'crash', partitions: 3 },
  { name: 'crash-pair', partitions: 2 },
]);
process.stdout.write('ready\n');

const records = (ids: string[]): StreamRecord[] =>
  ids.map((id) => ({ key: id.slice(-1), value: Buffer.from(id), headers: { id } }));

async function writer(w: number): Promise<never> {
  for (let i = 0; ; i++) {
    const ids = Array.from({ length: 1 + (i % 4) }, (_, j) => `${tag}-${w}-${i}-${j}`);
    if (i % 3 === 0) {
      // Atomic: the same ids to both topics, so a half-visible pair would show.
      await stream.appendAtomically([
        { topic: 'crash', records: records(ids) },
        { topic: 'crash-pair', records: records(ids) },
      ]);
      process.stdout.write(`ack atomic ${ids.join(',')}\n`);
    } else {
      await stream.append('crash', records(ids));
      process.stdout.write(`ack plain ${ids.join(',')}\n`);
    }
  }
}

await Promise.all([0, 1, 2, 3].map(writer));
