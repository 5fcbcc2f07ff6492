/**
 * kafkajs's read_committed filter, as hooklog installs it (patches/kafkajs+2.2.4.patch, applied by
 * `npm install` through patch-package). A fetch that starts inside two aborted transactions of
 * different producers lists both in `abortedTransactions`; kafkajs 2.2.4 switched on one aborted
 * producer per record, so the second producer's aborted records reached the consumer. On the
 * alerting state topic (one partition, a producer per logs partition) a killed instance leaves
 * exactly that: the next owner restored an aborted checkpoint and skipped the batches it covered
 * (kill.test.ts lost 4 of 1,200 alerts in 4 of 11 runs).
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

type Message = { offset: string; key: Buffer | null; batchContext: { producerId: string; inTransaction: boolean } };
type Filter = (a: {
  messages: Message[];
  abortedTransactions: Array<{ producerId: string; firstOffset: string }>;
}) => Message[];
const filterAbortedMessages = createRequire(import.meta.url)('kafkajs/src/consumer/filterAbortedMessages.js') as Filter;

const ABORT_MARKER = Buffer.from([0, 0, 0, 0]);
const record = (offset: number, producerId: string, inTransaction = true): Message => ({
  offset: String(offset),
  key: Buffer.from(`k${offset}`),
  batchContext: { producerId, inTransaction },
});
const abortMarker = (offset: number, producerId: string): Message => ({
  ...record(offset, producerId),
  key: ABORT_MARKER,
});

/** Offsets of the data records the filter keeps, given aborted transactions as [producerId, firstOffset] pairs. */
function keptOffsets(messages: Message[], aborted: Array<[string, number]>): string[] {
  const abortedTransactions = aborted.map(([producerId, first]) => ({ producerId, firstOffset: String(first) }));
  return filterAbortedMessages({ messages, abortedTransactions })
    .filter((m) => m.key !== ABORT_MARKER)
    .map((m) => m.offset);
}

describe('kafkajs aborted-transaction filter (patched)', () => {
  // Producer 1 began at 100 and producer 2 at 101; both were aborted. This fetch starts at 101.
  const messages = [record(101, '2'), abortMarker(102, '1'), abortMarker(103, '2'), record(104, '3', false)];

  it('drops the records of every aborted transaction the fetch starts inside', () => {
    expect(
      keptOffsets(messages, [
        ['1', 100],
        ['2', 101],
      ]),
    ).toEqual(['104']);
  });

  it('reads the aborted list in offset order, whatever order the broker sent', () => {
    const interleaved = [
      record(100, '1'),
      abortMarker(101, '1'),
      record(102, '3', false),
      record(103, '2'),
      abortMarker(104, '2'),
    ];
    expect(
      keptOffsets(interleaved, [
        ['2', 103],
        ['1', 100],
      ]),
    ).toEqual(['102']);
  });

  it("keeps a producer's committed records after its aborted transaction ended", () => {
    const after = [record(100, '1'), abortMarker(101, '1'), record(102, '1'), record(103, '2')];
    expect(keptOffsets(after, [['1', 100]])).toEqual(['102', '103']);
  });
});
