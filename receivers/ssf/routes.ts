/**
 * The Shared Signals push endpoint, `POST /hooks/ssf/:id` (RFC 8935): one per
 * configured receiver (`ssf_receivers:`). `startSsfReceivers` builds them and
 * reads each transmitter's configuration and keys once before HTTP starts;
 * `mountSsfReceivers` serves them. push.ts handles a push.
 */
import type Router from '@koa/router';
import type { Logger } from '../../platform/log.js';
import { SecretMatcher } from '../../platform/secret-matcher.js';
import type { Topics } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import { TransmitterKeys } from './keys.js';
import { Receiver, handlePush } from './push.js';
import type { SsfReceiverConfig } from './receiver-config.js';
import { createSsfReceiverTelemetry, type SsfReceiverTelemetry } from './receiver-telemetry.js';

export interface SsfReceivers {
  readonly receivers: ReadonlyMap<string, Receiver>;
  readonly telemetry: SsfReceiverTelemetry;
}

/** Builds the receivers and fetches their transmitters' keys (an unreachable transmitter is logged, not fatal). */
export async function startSsfReceivers(configs: readonly SsfReceiverConfig[], logger: Logger): Promise<SsfReceivers> {
  const telemetry = createSsfReceiverTelemetry(logger);
  const receivers = new Map<string, Receiver>();
  for (const cfg of configs) {
    const keys = new TransmitterKeys(cfg, { fetched: telemetry.keysFetched });
    const authorization = cfg.authorization ? new SecretMatcher(cfg.authorization.secrets) : undefined;
    receivers.set(cfg.id, new Receiver(cfg, keys, authorization));
  }
  await Promise.all([...receivers.values()].map((r) => r.keys.start()));
  return { receivers, telemetry };
}

export interface SsfMountDeps {
  readonly ssf: SsfReceivers;
  readonly stream: Stream;
  readonly topics: Pick<Topics, 'logs' | 'deadletter' | 'securityEvents'>;
}

export function mountSsfReceivers(router: Router, deps: SsfMountDeps): void {
  const { receivers, telemetry } = deps.ssf;
  const pushDeps = { stream: deps.stream, topics: deps.topics, telemetry };
  router.post('/hooks/ssf/:receiverId', async (ctx) => {
    // Map.get with an attacker's string is safe: no prototype lookup.
    const receiver = receivers.get(String(ctx.params.receiverId));
    const facts = { receiver: receiver?.cfg.id ?? 'unknown', requestId: String(ctx.state.requestId) };
    if (!receiver) {
      ctx.req.resume();
      telemetry.unknownReceiver(facts);
      ctx.status = 404;
      ctx.type = 'application/json';
      ctx.body = { err: 'invalid_request', description: 'no SSF receiver with this id' };
      return;
    }
    await handlePush(ctx, receiver, facts, pushDeps);
  });
}
