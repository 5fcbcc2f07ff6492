/**
 * Record format versions (formats.ts) on a real embedded log: every family's appends are stamped; its consumers get
 * the previous release's records (no header) and this release's, and dead-letter a newer format with its raw
 * bytes; readers of state leave a newer record out. Written against the wrapper's public seam (`openStream`
 * applies it), so it holds for Kafka too: the wrapper only sees the Stream interface.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log.js';
import { openEmbeddedStream } from './embedded/index.js';
import { tempDirs } from './embedded/testing.js';
import { RECORD_FORMATS, TOPIC_FAMILIES, checkFormat, familyOf, withRecordFormats } from './formats.js';
import { Header } from './headers.js';
import type { ConsumedRecord, Stream } from './types.js';
import { waitFor } from '../../test/support/wait.js';
import { topicNames } from './headers.js';
import { riskTopics } from '../../schemas/risk.js';
import { identityTopic } from '../../schemas/identity.js';
import { alertingTopics } from '../../consumers/alerting/index.js';
import { responseTopics } from '../../consumers/response/records.js';
import { alertStatesTopic, consoleSessionsTopic, savedSearchesTopic } from '../../console/index.js';

const dir = tempDirs();
const PREFIX = 'fmt';

async function open() {
  const raw = await openEmbeddedStream({ dataDir: dir() });
  const stream = withRecordFormats(raw, { prefix: PREFIX, logger: silentLogger() });
  return { raw, stream };
}

/** Every record of `topic` as read by a consumer group of `stream`, until `n` arrived. */
async function consumeAll(stream: Stream, topic: string, n: number, group: string): Promise<ConsumedRecord[]> {
  const got: ConsumedRecord[] = [];
  const consumer = await stream.consume({
    topic,
    group,
    maxBatchWaitMs: 10,
    handler: async (b) => {
      got.push(...b.records);
    },
  });
  try {
    await waitFor(() => got.length, { until: (c) => c >= n, timeoutMs: 20_000, what: `${n} records of ${topic}` });
  } finally {
    await consumer.stop();
  }
  return got;
}

const value = (family: string, tag: string) => Buffer.from(JSON.stringify({ family, tag }));

describe('record format versions', () => {
  it('names every family the same way, and knows nothing outside the prefix', () => {
    expect(familyOf('fmt.logs', PREFIX)).toBe('logs');
    expect(familyOf('fmt.risk-changes', PREFIX)).toBe('risk-changes');
    expect(familyOf('other.logs', PREFIX)).toBeNull();
    expect(familyOf('fmt.unknown', PREFIX)).toBeNull();
    for (const f of TOPIC_FAMILIES) {
      expect(checkFormat(f, {})).toEqual({ ok: true, version: 0 });
      expect(checkFormat(f, { [Header.format]: String(RECORD_FORMATS[f].writes) }).ok).toBe(true);
      expect(checkFormat(f, { [Header.format]: '2' }).ok).toBe(false);
      expect(checkFormat(f, { [Header.format]: '01' }).ok).toBe(false);
      expect(checkFormat(f, { [Header.format]: '1e3' }).ok).toBe(false);
    }
  });

  it('knows every topic hooklog writes', () => {
    const every = [
      ...Object.values(topicNames(PREFIX)),
      ...Object.values(riskTopics(PREFIX)),
      ...Object.values(alertingTopics(PREFIX)),
      ...Object.values(responseTopics(PREFIX)),
      alertStatesTopic(PREFIX),
      consoleSessionsTopic(PREFIX),
      identityTopic(PREFIX),
      savedSearchesTopic(PREFIX),
    ];
    expect(every.filter((t) => familyOf(t, PREFIX) === null)).toEqual([]);
    expect(new Set(every.map((t) => familyOf(t, PREFIX))).size).toBe(TOPIC_FAMILIES.length);
  });

  it('stamps every append of every family, through append, appendAtomically and a claim', async () => {
    const { raw, stream } = await open();
    try {
      await stream.ensureTopics(TOPIC_FAMILIES.map((f) => ({ name: `${PREFIX}.${f}`, partitions: 1 })));
      await stream.ensureTopics([{ name: 'elsewhere', partitions: 1 }]);
      const half = Math.ceil(TOPIC_FAMILIES.length / 2);
      for (const f of TOPIC_FAMILIES.slice(0, half))
        await stream.append(`${PREFIX}.${f}`, [{ key: 'k', value: value(f, 'append'), headers: {} }]);
      await stream.appendAtomically(
        TOPIC_FAMILIES.slice(half).map((f) => ({
          topic: `${PREFIX}.${f}`,
          records: [{ key: 'k', value: value(f, 'atomic'), headers: {} }],
        })),
      );
      const t = await stream.claim('owner-1');
      await t.appendAtomically([
        { topic: `${PREFIX}.logs`, records: [{ key: 'k', value: value('logs', 'claim'), headers: {} }] },
      ]);
      await t.close();
      await stream.append('elsewhere', [{ key: 'k', value: Buffer.from('x'), headers: {} }]);

      for (const f of TOPIC_FAMILIES) {
        const records = await consumeAll(raw, `${PREFIX}.${f}`, f === 'logs' ? 2 : 1, `raw-${f}`);
        for (const r of records) expect(r.headers[Header.format], `${f} ${r.value.toString()}`).toBe('1');
      }
      // A topic that is not hooklog's is left as it was.
      const [other] = await consumeAll(raw, 'elsewhere', 1, 'raw-elsewhere');
      expect(other!.headers[Header.format]).toBeUndefined();
    } finally {
      await stream.close();
    }
  }, 60_000);

  it("each family's consumers read the previous release's records and this one's, and dead-letter a newer format whole", async () => {
    const { raw, stream } = await open();
    try {
      await stream.ensureTopics(TOPIC_FAMILIES.map((f) => ({ name: `${PREFIX}.${f}`, partitions: 1 })));
      const deadletter = `${PREFIX}.deadletter`;
      let expectedLetters = 0;
      for (const f of TOPIC_FAMILIES) {
        const topic = `${PREFIX}.${f}`;
        // Written raw, as each release would: 0.1.0 (no header), this one (1), a future one (2), and a broken header.
        await raw.append(topic, [
          { key: 'a', value: value(f, 'unversioned'), headers: { [Header.org]: 'org-1' } },
          { key: 'b', value: value(f, 'v1'), headers: { [Header.format]: '1' } },
          {
            key: 'c',
            value: Buffer.from([0xff, 0x00, 0x7b]),
            headers: { [Header.format]: '2', [Header.org]: 'org-2' },
          },
          { key: 'd', value: value(f, 'garbled'), headers: { [Header.format]: 'v1' } },
          { key: 'e', value: value(f, 'after'), headers: { [Header.format]: '1' } },
        ]);
        if (f !== 'deadletter') expectedLetters += 2;
      }
      for (const f of TOPIC_FAMILIES) {
        if (f === 'deadletter') continue;
        const topic = `${PREFIX}.${f}`;
        const read = await consumeAll(stream, topic, 3, `group-${f}`);
        expect(read.map((r) => JSON.parse(r.value.toString()).tag)).toEqual(['unversioned', 'v1', 'after']);
      }
      // The dead-letter topic's own readers store whatever reached it: nothing there is dead-lettered again.
      const ownLetters = await consumeAll(stream, deadletter, 5, 'group-deadletter-own');
      expect(ownLetters.slice(0, 5).map((r) => r.key)).toEqual(['a', 'b', 'c', 'd', 'e']);

      const letters = (await consumeAll(raw, deadletter, 5 + expectedLetters, 'raw-deadletter')).slice(5);
      expect(letters).toHaveLength(expectedLetters);
      for (const f of TOPIC_FAMILIES.filter((x) => x !== 'deadletter')) {
        const mine = letters.filter((l) => l.headers[Header.originalTopic] === `${PREFIX}.${f}`);
        expect(
          mine.map((l) => l.key),
          f,
        ).toEqual(['c', 'd']);
        const [newer, garbled] = mine;
        expect(newer!.value).toEqual(Buffer.from([0xff, 0x00, 0x7b]));
        expect(newer!.headers[Header.errorCode]).toBe('RECORD_FORMAT_UNKNOWN');
        expect(newer!.headers[Header.originalFormat]).toBe('2');
        expect(newer!.headers[Header.org]).toBe('org-2');
        expect(newer!.headers[Header.reason]).toContain(`${f} record of format 2; this hooklog reads unversioned, 1`);
        expect(newer!.headers[Header.originalOffset]).toBe('2');
        expect(newer!.headers[Header.format]).toBe('1');
        expect(garbled!.headers[Header.reason]).toContain('is not a version number');
        expect(garbled!.value.toString()).toBe(value(f, 'garbled').toString());
      }
    } finally {
      await stream.close();
    }
  }, 120_000);

  it('readers of state leave a newer record out: latest by key and watch', async () => {
    const { raw, stream } = await open();
    try {
      const topic = `${PREFIX}.risk`;
      await stream.ensureTopics([{ name: topic, partitions: 1, compacted: true }]);
      await raw.append(topic, [
        { key: 'old', value: value('risk', 'unversioned'), headers: {} },
        { key: 'cur', value: value('risk', 'v1'), headers: { [Header.format]: '1' } },
        { key: 'new', value: value('risk', 'v2'), headers: { [Header.format]: '2' } },
      ]);
      const latest = await stream.readLatestByKey(topic);
      expect([...latest.keys()].sort()).toEqual(['cur', 'old']);
      const seen: string[] = [];
      const unwatch = await stream.watch(topic, (rs) => seen.push(...rs.map((r) => r.key ?? '')));
      await raw.append(topic, [
        { key: 'later-new', value: value('risk', 'v2'), headers: { [Header.format]: '2' } },
        { key: 'later-cur', value: value('risk', 'v1'), headers: { [Header.format]: '1' } },
      ]);
      await waitFor(() => [...seen], {
        until: (s) => s.includes('later-cur'),
        timeoutMs: 10_000,
        what: 'the watched record',
      });
      unwatch();
      expect(seen).not.toContain('new');
      expect(seen).not.toContain('later-new');
      expect(seen).toEqual(expect.arrayContaining(['old', 'cur', 'later-cur']));
    } finally {
      await stream.close();
    }
  }, 60_000);
});
