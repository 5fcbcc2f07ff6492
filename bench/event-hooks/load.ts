/**
 * A bounded, self-stopping load generator for one event hook on 127.0.0.1:
 * every run has a deadline and a cap on requests in flight, and stops issuing
 * when either is reached. Deliveries are built from fixture events with fresh
 * uuids and eventIds (so neither the receiver's delivery dedupe nor
 * ClickHouse's uuid dedupe can shortcut the work), from pre-serialised parts
 * so building a 50-event body costs microseconds, not the receiver's CPU.
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';

const MARK = '\u0000uuid\u0000';

export class DeliveryFactory {
  readonly #parts: string[][];
  readonly #head: string;
  readonly size: number;
  #next = 0;
  /** Deliveries built ahead of a cell, taken first; each is sent once. */
  #ready: Delivery[] = [];
  /** Deliveries built while a cell ran because none was ready (their building is the generator's CPU). */
  builtLive = 0;

  /** `templates`: events to cycle through; `size`: events per delivery. */
  constructor(templates: ReadonlyArray<Record<string, unknown>>, size: number, org: string, hookId: string) {
    this.size = size;
    this.#parts = templates.map((e) => JSON.stringify({ ...e, uuid: MARK }).split(JSON.stringify(MARK)));
    this.#head = `{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","cloudEventsVersion":"0.1","source":"https://${org}.example.com/api/v1/eventHooks/${hookId}","contentType":"application/json"`;
  }

  /**
   * Builds deliveries ahead until `count` are ready, outside the measured time: like the
   * baseline's pre-built record batches, building bodies is not what the bench measures, and on
   * two cores it would be charged to the receiver's ratio (a 50-event body costs about as much
   * CPU to build as the receiver spends reading it).
   */
  fill(count: number): void {
    while (this.#ready.length < count) this.#ready.push(this.#build());
  }

  /** A new delivery (never sent before). */
  next(): Delivery {
    const ready = this.#ready.pop();
    if (ready) return ready;
    this.builtLive++;
    return this.#build();
  }

  #build(): Delivery {
    const events: string[] = [];
    for (let i = 0; i < this.size; i++) {
      const parts = this.#parts[this.#next++ % this.#parts.length]!;
      events.push(parts.join(`"${randomUUID()}"`));
    }
    const eventId = randomUUID();
    const head = `${this.#head},"eventId":"${eventId}","eventTime":"${new Date().toISOString()}","data":{"events":[`;
    const ranges: number[] = [];
    let at = Buffer.byteLength(head);
    for (const e of events) {
      const bytes = Buffer.byteLength(e);
      ranges.push(at, at + bytes);
      at += bytes + 1;
    }
    const body = `${head}${events.join(',')}]}}`;
    return { body: Buffer.from(body), eventId, ranges: ranges.join(',') };
  }
}

export interface Delivery {
  readonly body: Buffer;
  readonly eventId: string;
  /** Where each event's bytes are in the body: start,end pairs, comma-separated (FLOOR_RANGES_HEADER). */
  readonly ranges: string;
}

/**
 * The HTTP floor's request headers (server.ts): the delivery's id and where its events are, so that the floor
 * splits the body without reading it.
 */
export const FLOOR_PATH = '/bench/http-floor';
export const FLOOR_RANGES_HEADER = 'x-bench-event-ranges';
export const FLOOR_DELIVERY_HEADER = 'x-bench-delivery-id';

export interface CellResult {
  /** Events in deliveries answered 204, per second of the cell's wall time. */
  readonly eventsPerSec: number;
  readonly deliveries: number;
  /** Answers other than 204, by status (or "error"). */
  readonly failures: Record<string, number>;
  /** Per 204: milliseconds from sending to the answer. */
  readonly latencies: number[];
  readonly elapsedMs: number;
}

export interface Target {
  readonly url: string;
  readonly header: string;
  readonly secret: string;
  /** The HTTP floor (server.ts): each request also says where its events are. */
  readonly floor?: boolean;
}

function post(agent: Agent, t: Target, d: Delivery): Promise<number | 'error'> {
  const body = d.body;
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    [t.header]: t.secret,
    'content-length': body.length,
  };
  if (t.floor) {
    headers[FLOOR_RANGES_HEADER] = d.ranges;
    headers[FLOOR_DELIVERY_HEADER] = d.eventId;
  }
  return new Promise((resolve) => {
    const req = request(
      t.url,
      {
        method: 'POST',
        agent,
        headers,
        timeout: 3000,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 'error'));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve('error'));
    req.end(body);
  });
}

function collect() {
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let events = 0;
  let deliveries = 0;
  return {
    async send(agent: Agent, t: Target, f: DeliveryFactory): Promise<void> {
      const d = f.next();
      const t0 = performance.now();
      const status = await post(agent, t, d);
      deliveries++;
      if (status === 204) {
        latencies.push(performance.now() - t0);
        events += f.size;
      } else {
        failures[String(status)] = (failures[String(status)] ?? 0) + 1;
      }
    },
    result(elapsedMs: number): CellResult {
      return { eventsPerSec: (events * 1000) / elapsedMs, deliveries, failures, latencies, elapsedMs };
    },
  };
}

/** `concurrency` senders back to back for `durationMs`; then waits for the last answers. */
export async function closedLoop(
  t: Target,
  f: DeliveryFactory,
  concurrency: number,
  durationMs: number,
): Promise<CellResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const c = collect();
  const start = performance.now();
  const deadline = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) await c.send(agent, t, f);
    }),
  );
  const elapsed = performance.now() - start;
  agent.destroy();
  return c.result(elapsed);
}

/**
 * Deliveries at a fixed rate (open loop: a slow answer does not slow the
 * sending, as with the service), for `durationMs`, never more than
 * `maxInFlight` unanswered (past that, sends are skipped and counted).
 */
export async function fixedRate(
  t: Target,
  f: DeliveryFactory,
  eventsPerSec: number,
  durationMs: number,
  maxInFlight = 256,
): Promise<CellResult & { skipped: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: maxInFlight });
  const c = collect();
  const intervalMs = (1000 * f.size) / eventsPerSec;
  const start = performance.now();
  const pending = new Set<Promise<void>>();
  let skipped = 0;
  for (let i = 0; ; i++) {
    const due = start + i * intervalMs;
    if (due >= start + durationMs) break;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (pending.size >= maxInFlight) {
      skipped++;
      continue;
    }
    const p = c.send(agent, t, f).finally(() => pending.delete(p));
    pending.add(p);
  }
  await Promise.all(pending);
  const elapsed = performance.now() - start;
  agent.destroy();
  return { ...c.result(elapsed), skipped };
}
