/**
 * The simulated org's event hook: delivers the events of the types it
 * subscribes to, as the service does (protocols.md §1) — batched envelopes,
 * one retry of a failed delivery, then the delivery is lost and the loss is
 * logged in the org's System Log as an `event_hook.delivery` failure. A
 * seeded share of deliveries is dropped outright (as if both attempts timed
 * out), so a test knows exactly which events only the System Log has.
 */
import { randomUUID } from 'node:crypto';
import { seededRandom } from '../support/random.js';
import type { SimulatedOrg } from './server.js';
import type { StoredEvent } from './store.js';

export interface DeliveryEnvelope {
  readonly eventType: 'com.okta.event_hook';
  readonly eventTypeVersion: '1.0';
  readonly cloudEventsVersion: '0.1';
  readonly source: string;
  readonly eventId: string;
  readonly eventTime: string;
  readonly contentType: 'application/json';
  readonly data: { readonly events: unknown[] };
}

export interface HookSenderOptions {
  /** The service's id of the hook (the loss event's target). */
  readonly hookId: string;
  /** Event types the hook subscribes to. */
  readonly types: readonly string[];
  /** Share of deliveries lost, in [0, 1). */
  readonly dropRate: number;
  readonly seed?: number;
  /** Events per delivery. Default 5. */
  readonly batch?: number;
  /** Sends one attempt; resolves with the HTTP status. */
  readonly post: (envelope: DeliveryEnvelope) => Promise<number>;
}

export class HookSender {
  readonly #sim: SimulatedOrg;
  readonly #o: HookSenderOptions;
  readonly #rng: () => number;
  /** uuids delivered (acknowledged) and lost. */
  readonly delivered: string[] = [];
  readonly lost: string[] = [];
  /** uuids of the event_hook.delivery failure events logged. */
  readonly lossEvents: string[] = [];
  deliveries = 0;

  constructor(sim: SimulatedOrg, opts: HookSenderOptions) {
    this.#sim = sim;
    this.#o = opts;
    this.#rng = seededRandom(opts.seed ?? 7);
  }

  subscribes(e: StoredEvent): boolean {
    const type = (JSON.parse(e.json) as { eventType?: unknown }).eventType;
    return typeof type === 'string' && this.#o.types.includes(type);
  }

  /** Delivers the subscribed ones among `events` (just stored in the org), in batches. */
  async send(events: readonly StoredEvent[]): Promise<void> {
    const mine = events.filter((e) => this.subscribes(e));
    const size = this.#o.batch ?? 5;
    for (let i = 0; i < mine.length; i += size) {
      const batch = mine.slice(i, i + size);
      const envelope: DeliveryEnvelope = {
        eventType: 'com.okta.event_hook',
        eventTypeVersion: '1.0',
        cloudEventsVersion: '0.1',
        source: `${this.#sim.url}/api/v1/eventHooks/${this.#o.hookId}`,
        eventId: randomUUID(),
        eventTime: new Date().toISOString(),
        contentType: 'application/json',
        data: { events: batch.map((e) => JSON.parse(e.json) as unknown) },
      };
      this.deliveries++;
      let ok = false;
      if (this.#rng() >= this.#o.dropRate) {
        // 2xx acknowledged; 5xx or a network failure retried once; 4xx never retried.
        for (let attempt = 0; attempt < 2 && !ok; attempt++) {
          const status = await this.#o.post(envelope).catch(() => 0);
          ok = status >= 200 && status < 300;
          if (status >= 400 && status < 500) break;
        }
      }
      const ids = batch.map((e) => e.id);
      if (ok) {
        this.delivered.push(...ids);
      } else {
        this.lost.push(...ids);
        this.lossEvents.push(this.#logLoss(envelope.eventId, ids.length));
      }
    }
  }

  /** The System Log's record of a lost delivery. Fields beyond type, outcome and target are illustrative. */
  #logLoss(deliveryId: string, count: number): string {
    const uuid = randomUUID();
    const now = Date.now();
    this.#sim.addLogEvents([
      {
        published: now,
        event: {
          uuid,
          eventType: 'event_hook.delivery',
          version: '0',
          severity: 'WARN',
          legacyEventType: null,
          displayMessage: 'Event hook delivery',
          outcome: { result: 'FAILURE', reason: 'Event hook delivery failed after a retry' },
          actor: {
            id: this.#o.hookId,
            type: 'EventHook',
            alternateId: 'unknown',
            displayName: 'hooklog',
            detailEntry: null,
          },
          target: [
            {
              id: this.#o.hookId,
              type: 'EventHook',
              alternateId: 'unknown',
              displayName: 'hooklog',
              detailEntry: null,
            },
          ],
          client: null,
          transaction: { type: 'JOB', id: deliveryId, detail: null },
          debugContext: { debugData: { eventHookDeliveryId: deliveryId, eventCount: String(count) } },
        },
      },
    ]);
    return uuid;
  }
}
