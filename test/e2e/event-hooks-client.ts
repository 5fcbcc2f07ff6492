/**
 * The identity service's side of event hooks, for the end-to-end suites:
 * verification first, then deliveries with a 3 s time-out and one retry on a
 * 5xx or a time-out (never on a 4xx), as protocols.md §1 describes. Plus raw
 * HTTP for bad input, and a reader for hooklog's Kafka topics.
 */
import { request as httpRequest } from 'node:http';
import { quietKafka, toConsumed } from '../../platform/stream/kafka/client.js';
import { randomName, waitFor } from '../support/wait.js';

export type Outcome = number | 'timeout';

export interface DeliveryResult {
  /** Each attempt's status (or time-out) and how long it took. */
  readonly attempts: Array<{ outcome: Outcome; ms: number }>;
  readonly final: Outcome;
}

export interface ServiceClientOptions {
  readonly baseUrl: string;
  readonly hookId: string;
  readonly header: string;
  readonly secret: string;
  /** The service's per-attempt time-out. */
  readonly timeoutMs?: number;
}

export class ServiceClient {
  readonly #o: Required<ServiceClientOptions>;

  constructor(o: ServiceClientOptions) {
    this.#o = { timeoutMs: 3000, ...o };
  }

  get url(): string {
    return `${this.#o.baseUrl}/hooks/events/${this.#o.hookId}`;
  }

  /** The one-time verification GET. */
  async verify(challenge: string): Promise<{ status: number; contentType: string | null; body: unknown }> {
    const res = await fetch(this.url, {
      headers: { [this.#o.header]: this.#o.secret, 'x-okta-verification-challenge': challenge },
      signal: AbortSignal.timeout(this.#o.timeoutMs),
    });
    const text = await res.text();
    return {
      status: res.status,
      contentType: res.headers.get('content-type'),
      body: text ? JSON.parse(text) : undefined,
    };
  }

  /** One attempt: POST with the service's headers and time-out. */
  async attempt(body: Buffer): Promise<{ outcome: Outcome; ms: number }> {
    const t0 = performance.now();
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', [this.#o.header]: this.#o.secret },
        body,
        signal: AbortSignal.timeout(this.#o.timeoutMs),
      });
      await res.arrayBuffer();
      return { outcome: res.status, ms: performance.now() - t0 };
    } catch {
      return { outcome: 'timeout', ms: performance.now() - t0 };
    }
  }

  /**
   * A delivery as the service makes it: one retry on 5xx or time-out, never
   * on 4xx. `beforeRetry` lets a test decide when the retry happens.
   */
  async deliver(payload: unknown, beforeRetry?: () => Promise<void>): Promise<DeliveryResult> {
    const body = Buffer.isBuffer(payload) ? payload : Buffer.from(JSON.stringify(payload));
    const attempts = [await this.attempt(body)];
    if (retriable(attempts[0]!.outcome)) {
      await beforeRetry?.();
      attempts.push(await this.attempt(body));
    }
    return { attempts, final: attempts[attempts.length - 1]!.outcome };
  }
}

export function retriable(o: Outcome): boolean {
  return o === 'timeout' || o >= 500;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** Exactly these bytes and headers (no content-type added), over a fresh connection. */
export function rawRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: Buffer },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: opts.method ?? 'POST',
        headers: { ...opts.headers, ...(opts.body ? { 'content-length': String(opts.body.length) } : {}) },
        agent: false,
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end(opts.body);
  });
}

export interface TopicRecord {
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly value: Buffer;
  readonly headers: Record<string, string>;
}

/** Every record of a Kafka topic, read from the start by a fresh group, once `done(records)` holds. */
export async function readKafkaTopic(
  brokers: string,
  topic: string,
  done: (records: TopicRecord[]) => boolean,
  timeoutMs = 30_000,
): Promise<TopicRecord[]> {
  const kafka = quietKafka({ clientId: randomName('e2e-reader'), brokers: brokers.split(',') });
  const consumer = kafka.consumer({ groupId: randomName('e2e-reader'), maxWaitTimeInMs: 100 });
  const got: TopicRecord[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const r = toConsumed(topic, partition, message);
        got.push({ partition, offset: String(r.offset), key: r.key, value: r.value, headers: { ...r.headers } });
      },
    });
    await waitFor(() => done(got), {
      timeoutMs,
      what: `records of ${topic}`,
      seen: () => `${got.length} records read`,
    });
    return [...got];
  } finally {
    await consumer.disconnect();
  }
}
