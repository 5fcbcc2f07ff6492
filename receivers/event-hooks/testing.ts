/**
 * Helpers for this folder's component tests: the receiver's Koa app on a real
 * HTTP server over a real embedded stream, with a gate that can hold the
 * stream's acknowledgements back (the stream still writes everything; the gate
 * only delays when `append` resolves, or makes it fail as a broken stream would).
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Koa from 'koa';
import { parseConfig } from '../../cli/config/load.js';
import { createLogger } from '../../platform/log.js';
import { HooklogError } from '../../platform/errors.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames, type Topics } from '../../platform/stream/headers.js';
import type { ConsumedRecord, Stream, StreamRecord } from '../../platform/stream/types.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { createApp } from '../../cli/app.js';

export class GatedStream implements Stream {
  readonly kind = 'embedded' as const;
  readonly inner: EmbeddedStream;
  /** Records handed to append, per topic (including appends that were held or failed). */
  readonly appended = new Map<string, number>();
  #gate: Promise<void> | null = null;
  #fail = 0;

  constructor(inner: EmbeddedStream) {
    this.inner = inner;
  }

  /** Appends wait until the returned function is called. */
  hold(): () => void {
    let open!: () => void;
    this.#gate = new Promise((r) => (open = r));
    return () => {
      this.#gate = null;
      open();
    };
  }

  /** The next `n` appends fail without writing, as a broken stream's would. */
  failNext(n: number): void {
    this.#fail = n;
  }

  async append(topic: string, records: readonly StreamRecord[]): Promise<void> {
    this.appended.set(topic, (this.appended.get(topic) ?? 0) + records.length);
    if (this.#fail > 0) {
      this.#fail--;
      throw new HooklogError('STREAM_UNAVAILABLE', 'injected stream failure', { retriable: true });
    }
    const gate = this.#gate;
    await this.inner.append(topic, records);
    if (gate) await gate;
  }

  ensureTopics: Stream['ensureTopics'] = (s) => this.inner.ensureTopics(s);
  latestOffsets: Stream['latestOffsets'] = (t) => this.inner.latestOffsets(t);
  appendAtomically: Stream['appendAtomically'] = (w) => this.inner.appendAtomically(w);
  consume: Stream['consume'] = (o) => this.inner.consume(o);
  committedOffsets: Stream['committedOffsets'] = (t, g) => this.inner.committedOffsets(t, g);
  readLatestByKey: Stream['readLatestByKey'] = (t, p) => this.inner.readLatestByKey(t, p);
  follow: Stream['follow'] = (t) => this.inner.follow(t);
  watch: Stream['watch'] = (t, l) => this.inner.watch(t, l);
  claim: Stream['claim'] = (o, s) => this.inner.claim(o, s);
  assign: Stream['assign'] = (o) => this.inner.assign(o);
  ping: Stream['ping'] = () => this.inner.ping();
  close: Stream['close'] = () => this.inner.close();
}

export interface Harness {
  readonly url: string;
  /** The same app served by Koa alone: its event-hook routes, without the fast path in front of them. */
  readonly koaUrl: string;
  readonly stream: GatedStream;
  readonly topics: Topics;
  /** Every log line so far, parsed. */
  readonly logs: () => Array<Record<string, unknown>>;
  readonly rawLogs: () => string;
  close(): Promise<void>;
}

export const SECRET = 'component-secret-0123456789';

/**
 * The receiver as `hooklog start` builds it (createApp from parsed config) on 127.0.0.1, over its own embedded
 * stream.
 */
export async function startHarness(extra: Record<string, unknown> = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-receiver-'));
  const config = parseConfig(
    {
      data_dir: dir,
      event_hooks: [{ id: 'h1', org: 'acme', auth: { header: 'x-hook-secret', secrets: [SECRET] } }],
      ...extra,
    },
    {},
  );
  let lines = '';
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk, _enc, cb) {
        lines += String(chunk);
        cb();
      },
    }),
  });
  const stream = new GatedStream(await openEmbeddedStream({ dataDir: dir }));
  const topics = topicNames(randomName('t').replace(/_/g, '-'));
  await stream.ensureTopics([
    { name: topics.logs, partitions: 2 },
    { name: topics.deadletter, partitions: 1 },
  ]);
  const app = createApp({ config, stream, topics, probes: [], logger });
  const server: Server = createServer(app.callback());
  const koaServer: Server = createServer(Koa.prototype.callback.call(app));
  const listen = async (s: Server) => {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  };
  return {
    url: await listen(server),
    koaUrl: await listen(koaServer),
    stream,
    topics,
    rawLogs: () => lines,
    logs: () =>
      lines
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    async close() {
      for (const s of [server, koaServer])
        await new Promise<void>((r) => {
          s.close(() => r());
          s.closeAllConnections();
        });
      await stream.close();
    },
  };
}

/** Every record of `topic` once at least `atLeast` are there (a fresh group, from the start). */
export async function readTopic(stream: GatedStream, topic: string, atLeast: number): Promise<ConsumedRecord[]> {
  const got: ConsumedRecord[] = [];
  const consumer = await stream.inner.consume({
    topic,
    group: randomName('read'),
    maxBatchWaitMs: 5,
    handler: async (b) => void got.push(...b.records),
  });
  try {
    await waitFor(
      () => ({ read: got.length, end: [...stream.inner.endOffsets(topic).values()].reduce((a, b) => a + b, 0) }),
      {
        until: (n) => n.read >= atLeast && n.read === n.end,
        timeoutMs: 10_000,
        what: `${atLeast} records in ${topic}`,
      },
    );
  } finally {
    await consumer.stop();
  }
  return got;
}

/** One sample's value from a Prometheus text exposition, 0 when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^[^{ ]+(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const have = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[2]);
  }
  return 0;
}
