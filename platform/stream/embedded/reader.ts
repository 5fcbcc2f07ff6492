/**
 * Reading records of one partition back from disk, from a position up to the
 * last durable frame. Values are read from the segment files each time, never
 * kept in memory by the log.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { HooklogError } from '../../errors.js';
import type { ConsumedRecord } from '../types.js';
import { decodePayload } from './frame.js';
import { scanFrames } from './frame-reader.js';
import type { EmbeddedLog } from './log.js';
import type { Position } from './offset-index.js';

/** How much of the log one `read` call scans before returning. */
const READ_BYTES = 1024 * 1024;

export class PartitionReader {
  readonly #log: EmbeddedLog;
  readonly #topic: string;
  readonly #partition: number;
  #fh: FileHandle | null = null;
  #fhPath = '';
  #at: Position;
  /** Records below this offset were delivered already (or are before the start). */
  #want: number;

  constructor(log: EmbeddedLog, topic: string, partition: number, fromOffset: number) {
    this.#log = log;
    this.#topic = topic;
    this.#partition = partition;
    this.#want = fromOffset;
    this.#at = log.seek(topic, partition, fromOffset);
  }

  /** Offset the next returned record will have at the earliest. */
  get nextOffset(): number {
    return this.#want;
  }

  /**
   * The partition's next records, in offset order, from up to about 1 MiB of
   * log, stopping after the frame that brought the count to `maxRecords`. An
   * empty array with `atEnd` when the durable end was reached.
   */
  async read(maxRecords = Infinity): Promise<{ records: ConsumedRecord[]; atEnd: boolean }> {
    const records: ConsumedRecord[] = [];
    const loc = this.#log.locate(this.#at);
    if (!loc) return { records, atEnd: true };
    let fh: FileHandle;
    try {
      fh = await this.#file(loc.seg.path);
    } catch (err) {
      // Retention deletes a segment after taking it out of the list: if that is
      // what happened since `locate`, read on from the oldest retained segment.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && this.#log.locate(this.#at)?.seg !== loc.seg)
        return this.read(maxRecords);
      throw err;
    }
    const topic = this.#topic;
    const partition = this.#partition;
    const mine = (t: string, p: number) => t === topic && p === partition;
    const result = await scanFrames(fh, loc.pos, loc.seg.size, READ_BYTES, (payload, pos) => {
      let sections;
      try {
        sections = decodePayload(payload, mine).sections;
      } catch (err) {
        throw new HooklogError(
          'STREAM_CORRUPT',
          `embedded log corrupt: ${loc.seg.path} at byte ${pos}: ${String(err)}`,
          { cause: err },
        );
      }
      for (const s of sections) {
        if (!s.records) continue;
        s.records.forEach((r, i) => {
          const offset = s.baseOffset + i;
          if (offset >= this.#want) records.push({ topic, partition, offset, ...r });
        });
      }
      return records.length < maxRecords;
    });
    if (result.bad) {
      throw new HooklogError(
        'STREAM_CORRUPT',
        `embedded log corrupt: ${loc.seg.path} at byte ${result.bad.pos} (${result.bad.reason}) while reading ${topic}[${partition}]`,
      );
    }
    this.#at = { segment: loc.seg.base, pos: result.end };
    const last = records[records.length - 1];
    if (last) this.#want = last.offset + 1;
    return { records, atEnd: false };
  }

  /** Reads every remaining record up to the durable end. */
  async readToEnd(visit: (records: ConsumedRecord[]) => void): Promise<void> {
    for (;;) {
      const { records, atEnd } = await this.read();
      if (atEnd) return;
      visit(records);
    }
  }

  async #file(path: string): Promise<FileHandle> {
    if (this.#fh && this.#fhPath === path) return this.#fh;
    await this.close();
    this.#fh = await open(path, 'r');
    this.#fhPath = path;
    return this.#fh;
  }

  async close(): Promise<void> {
    const fh = this.#fh;
    this.#fh = null;
    this.#fhPath = '';
    await fh?.close();
  }
}
