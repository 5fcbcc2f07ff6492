/**
 * The behaviour every Stream implementation owes its callers, as one vitest
 * suite. `stream/embedded` and `stream/kafka` both run it, so the seam means
 * the same thing on both sides.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { randomName, waitFor } from '../../test/support/wait.js';
import type { ConsumedRecord, Consumer, RecordBatch, Stream, StreamRecord } from './types.js';

export interface ContractHarness {
  /** A stream on fresh state; `reopen` gives a second instance over the same state. */
  open(): Promise<Stream>;
}

const rec = (key: string, value: string, headers: Record<string, string> = {}): StreamRecord => ({
  key,
  value: Buffer.from(value),
  headers,
});

export function describeStreamContract(name: string, harness: ContractHarness, timeoutMs = 60_000): void {
  describe(`stream contract: ${name}`, () => {
    const open: Array<{ stream: Stream; consumers: Consumer[] }> = [];
    afterEach(async () => {
      for (const o of open.splice(0)) {
        for (const c of o.consumers) await c.stop();
        await o.stream.close();
      }
    });
    async function fresh() {
      const stream = await harness.open();
      const slot = { stream, consumers: [] as Consumer[] };
      open.push(slot);
      return slot;
    }

    it(
      'delivers appended records with key, value and headers intact, in order per key',
      async () => {
        const { stream, consumers } = await fresh();
        const topic = randomName('t');
        await stream.ensureTopics([{ name: topic, partitions: 3 }]);
        const sent: StreamRecord[] = [];
        for (let i = 0; i < 60; i++)
          sent.push(rec(`org${i % 4}`, `{"n":${i}}`, { 'hooklog-org': `org${i % 4}`, n: String(i) }));
        await stream.append(topic, sent.slice(0, 30));
        await stream.append(topic, sent.slice(30));
        const got: ConsumedRecord[] = [];
        consumers.push(
          await stream.consume({
            topic,
            group: randomName('g'),
            maxBatchWaitMs: 50,
            handler: async (b) => void got.push(...b.records),
          }),
        );
        await waitFor(() => got.length, { until: (n) => n >= 60, timeoutMs, what: '60 records' });
        expect(got).toHaveLength(60);
        for (const org of ['org0', 'org1', 'org2', 'org3']) {
          const mine = got.filter((r) => r.key === org);
          expect(new Set(mine.map((r) => r.partition)).size).toBe(1);
          expect(mine.map((r) => Number(r.headers.n))).toEqual(
            sent.filter((r) => r.key === org).map((r) => Number(r.headers.n)),
          );
          for (const r of mine) {
            expect(r.value.toString()).toBe(`{"n":${r.headers.n}}`);
            expect(r.headers['hooklog-org']).toBe(org);
            expect(r.topic).toBe(topic);
          }
        }
      },
      timeoutMs,
    );

    it(
      'commits only what the handler finished, and a restarted group resumes there',
      async () => {
        const { stream, consumers } = await fresh();
        const topic = randomName('t');
        const group = randomName('g');
        await stream.ensureTopics([{ name: topic, partitions: 1 }]);
        await stream.append(
          topic,
          Array.from({ length: 10 }, (_, i) => rec('k', String(i))),
        );
        const first: number[] = [];
        const c1 = await stream.consume({
          topic,
          group,
          maxBatchRecords: 4,
          maxBatchWaitMs: 20,
          handler: async (b) => {
            if (b.firstOffset >= 8) throw new Error('not now');
            first.push(...b.records.map((r) => r.offset));
          },
        });
        await waitFor(async () => (await stream.committedOffsets(topic, group)).get(0), {
          until: (n) => n === 8,
          timeoutMs,
          what: 'commit at 8',
        });
        await c1.stop();
        expect(first).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
        expect((await stream.committedOffsets(topic, group)).get(0)).toBe(8);

        const second: number[] = [];
        consumers.push(
          await stream.consume({
            topic,
            group,
            maxBatchWaitMs: 20,
            handler: async (b) => void second.push(...b.records.map((r) => r.offset)),
          }),
        );
        await waitFor(() => second.length, { until: (n) => n >= 2, timeoutMs, what: 'resumed records' });
        expect(second).toEqual([8, 9]);
        await waitFor(async () => (await stream.committedOffsets(topic, group)).get(0), {
          until: (n) => n === 10,
          timeoutMs,
          what: 'commit at 10',
        });
      },
      timeoutMs,
    );

    it(
      'offers a failed batch again and commits nothing past it meanwhile',
      async () => {
        const { stream, consumers } = await fresh();
        const topic = randomName('t');
        const group = randomName('g');
        await stream.ensureTopics([{ name: topic, partitions: 1 }]);
        await stream.append(
          topic,
          Array.from({ length: 5 }, (_, i) => rec('k', String(i))),
        );
        let failures = 0;
        const seen: number[][] = [];
        consumers.push(
          await stream.consume({
            topic,
            group,
            maxBatchWaitMs: 20,
            handler: async (b) => {
              seen.push(b.records.map((r) => r.offset));
              if (failures++ < 2) {
                expect(await stream.committedOffsets(topic, group).then((m) => m.get(0) ?? 0)).toBe(0);
                throw new Error('store down');
              }
            },
          }),
        );
        await waitFor(async () => (await stream.committedOffsets(topic, group)).get(0), {
          until: (n) => n === 5,
          timeoutMs,
          what: 'commit after retries',
        });
        expect(seen.length).toBe(3);
        expect(seen[0]).toEqual([0, 1, 2, 3, 4]);
        expect(seen[2]).toEqual(seen[0]);
      },
      timeoutMs,
    );

    it(
      'hands over batches no larger than maxBatchRecords, and a partial batch within maxBatchWaitMs',
      async () => {
        const { stream, consumers } = await fresh();
        const topic = randomName('t');
        await stream.ensureTopics([{ name: topic, partitions: 1 }]);
        await stream.append(
          topic,
          Array.from({ length: 25 }, (_, i) => rec('k', String(i))),
        );
        const batches: RecordBatch[] = [];
        consumers.push(
          await stream.consume({
            topic,
            group: randomName('g'),
            maxBatchRecords: 10,
            maxBatchWaitMs: 300,
            handler: async (b) => void batches.push(b),
          }),
        );
        await waitFor(() => batches.reduce((n, b) => n + b.records.length, 0), {
          until: (n) => n === 25,
          timeoutMs,
          what: '25 records',
        });
        for (const b of batches) {
          expect(b.records.length).toBeLessThanOrEqual(10);
          expect(b.lastOffset - b.firstOffset + 1).toBe(b.records.length);
        }
        expect(batches.flatMap((b) => b.records.map((r) => r.offset))).toEqual(Array.from({ length: 25 }, (_, i) => i));
        const t0 = Date.now();
        await stream.append(topic, [rec('k', 'late')]);
        await waitFor(() => batches, {
          until: (got) => got.some((b) => b.records.some((r) => r.value.toString() === 'late')),
          timeoutMs: 5_000,
          what: 'partial batch',
        });
        expect(Date.now() - t0).toBeLessThan(5_000);
      },
      timeoutMs,
    );

    it(
      'makes atomic writes to several topics visible together',
      async () => {
        const { stream, consumers } = await fresh();
        const a = randomName('a');
        const b = randomName('b');
        await stream.ensureTopics([
          { name: a, partitions: 1 },
          { name: b, partitions: 1, compacted: true },
        ]);
        await stream.appendAtomically([
          { topic: a, records: [rec('org', 'e1'), rec('org', 'e2')] },
          { topic: b, records: [rec('org', 'cursor-1')] },
        ]);
        await stream.appendAtomically([
          { topic: a, records: [rec('org', 'e3')] },
          { topic: b, records: [rec('org', 'cursor-2')] },
        ]);
        const got: string[] = [];
        consumers.push(
          await stream.consume({
            topic: a,
            group: randomName('g'),
            maxBatchWaitMs: 20,
            handler: async (bt) => void got.push(...bt.records.map((r) => r.value.toString())),
          }),
        );
        await waitFor(() => got.length, { until: (n) => n === 3, timeoutMs, what: 'atomic records' });
        expect(got).toEqual(['e1', 'e2', 'e3']);
        const latest = await stream.readLatestByKey(b);
        expect(latest.get('org')?.value.toString()).toBe('cursor-2');
      },
      timeoutMs,
    );

    it(
      'keeps records and committed positions across a reopen',
      async () => {
        const s1 = await harness.open();
        const topic = randomName('t');
        const group = randomName('g');
        await s1.ensureTopics([{ name: topic, partitions: 2 }]);
        await s1.append(
          topic,
          Array.from({ length: 8 }, (_, i) => rec(`k${i % 2}`, String(i))),
        );
        const seen: string[] = [];
        const c = await s1.consume({
          topic,
          group,
          maxBatchWaitMs: 20,
          handler: async (b) => void seen.push(...b.records.map((r) => r.value.toString())),
        });
        await waitFor(() => seen.length, { until: (n) => n === 8, timeoutMs, what: 'first pass' });
        await c.stop();
        await s1.append(topic, [rec('k0', 'after')]);
        await s1.close();

        const { stream, consumers } = await fresh();
        const again: string[] = [];
        consumers.push(
          await stream.consume({
            topic,
            group,
            maxBatchWaitMs: 20,
            handler: async (b) => void again.push(...b.records.map((r) => r.value.toString())),
          }),
        );
        await waitFor(() => again.length, { until: (n) => n >= 1, timeoutMs, what: 'record after reopen' });
        expect(again).toEqual(['after']);
      },
      timeoutMs,
    );

    it(
      'watch: the latest record per key, then each later one, an empty value being a tombstone',
      async () => {
        const { stream } = await fresh();
        const topic = randomName('t');
        await stream.ensureTopics([{ name: topic, partitions: 2, compacted: true }]);
        await stream.append(topic, [rec('a', '1'), rec('a', '2'), rec('b', 'x')]);
        // As a view keeps it: the highest offset per key wins, whatever order records come in.
        const view = new Map<string, ConsumedRecord>();
        const stop = await stream.watch(topic, (records) => {
          for (const r of records) {
            const had = view.get(r.key!);
            if (!had || had.offset < r.offset) view.set(r.key!, r);
          }
        });
        // Resolved: everything appended before the call is in.
        expect(view.get('a')?.value.toString()).toBe('2');
        expect(view.get('b')?.value.toString()).toBe('x');
        await stream.append(topic, [{ key: 'b', value: Buffer.alloc(0), headers: {} }, rec('c', 'y')]);
        await waitFor(() => view.get('c')?.value.toString(), {
          until: (v) => v === 'y',
          timeoutMs,
          what: 'a later record',
        });
        expect(view.get('b')?.value.length).toBe(0);
        stop();
        // A second watcher sees the same state from the start.
        const again = new Map<string, string>();
        const stop2 = await stream.watch(topic, (records) => {
          for (const r of records) again.set(r.key!, r.value.toString());
        });
        expect(again.get('a')).toBe('2');
        expect(again.get('c')).toBe('y');
        expect(again.get('b') ?? '').toBe('');
        stop2();
      },
      timeoutMs,
    );

    it(
      'tells a consumer which partitions it reads, and at stop that it no longer does',
      async () => {
        const { stream } = await fresh();
        const topic = randomName('t');
        await stream.ensureTopics([{ name: topic, partitions: 3 }]);
        const assigned: number[][] = [];
        const revoked: number[][] = [];
        const c = await stream.consume({
          topic,
          group: randomName('g'),
          handler: async () => undefined,
          onAssigned: (p) => void assigned.push([...p]),
          onRevoked: (p) => void revoked.push([...p]),
        });
        await waitFor(() => assigned.length, { until: (n) => n > 0, timeoutMs, what: 'an assignment' });
        expect(assigned.at(-1)).toEqual([0, 1, 2]);
        await c.stop();
        expect(revoked.at(-1)).toEqual([0, 1, 2]);
      },
      timeoutMs,
    );
  });
}
