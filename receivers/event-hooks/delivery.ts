import { describeIssues, eventHookDeliverySchema, logEventSchema } from '../../schemas/logevent.js';
import { Header, deadLetter } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';

export interface DeliveryContext {
  readonly org: string;
  readonly hookId: string;
  readonly receivedAt: Date;
}

export type DeliveryParse =
  | { readonly ok: true; readonly deliveryId: string | undefined; readonly events: StreamRecord[]; readonly rejected: StreamRecord[] }
  | { readonly ok: false; readonly reason: string };

export const ORIGIN = 'event-hook';

/**
 * Splits a delivery into records for the logs topic and dead letters. An
 * invalid event must not cost the valid ones their place: answering 4xx would
 * make the service drop the whole delivery for good, so each invalid event is
 * dead-lettered on its own and the rest go on.
 */
export function parseDelivery(body: Buffer, ctx: DeliveryContext): DeliveryParse {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return { ok: false, reason: `body is not JSON: ${(err as Error).message}` };
  }
  const envelope = eventHookDeliverySchema.safeParse(json);
  if (!envelope.success) return { ok: false, reason: `not an event hook delivery: ${describeIssues(envelope.error)}` };

  const deliveryId = envelope.data.eventId;
  const headers: Record<string, string> = {
    [Header.org]: ctx.org,
    [Header.source]: 'hook',
    [Header.hookId]: ctx.hookId,
    [Header.receivedAt]: ctx.receivedAt.toISOString(),
  };
  if (deliveryId) headers[Header.deliveryId] = deliveryId;

  const events: StreamRecord[] = [];
  const rejected: StreamRecord[] = [];
  envelope.data.data.events.forEach((event, i) => {
    const raw = Buffer.from(JSON.stringify(event) ?? 'null');
    const checked = logEventSchema.safeParse(event);
    if (checked.success) {
      events.push({ key: ctx.org, value: raw, headers });
    } else {
      rejected.push(deadLetter(raw, `data.events.${i}: ${describeIssues(checked.error)}`, ORIGIN, headers, ctx.org));
    }
  });
  return { ok: true, deliveryId, events, rejected };
}
