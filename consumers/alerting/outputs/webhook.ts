/**
 * Webhook output: its own consumer group on `<prefix>.alerts`, posting each
 * alert in offset order (so in order per org key, which is the record key)
 * and committing only after the receiver answered 2xx. A receiver that is
 * down or slow is retried without end with capped backoff (the offsets wait,
 * the alerts stay in the topic); while it is down the partition buffer fills
 * to queue_max_records and fetching pauses — the bounded queue. A 4xx other
 * than 408/429 means the receiver refuses this alert: retrying cannot help,
 * so it is logged and counted, and the next alert goes. A grouped alert's
 * updates (revision > 0) are not posted: one call per group and period.
 */
import { retry, RetryPolicies, type RetryPolicy } from '../../../platform/retry.js';
import type { Consumer, Stream } from '../../../platform/stream/types.js';
import type { Alert } from '../alert.js';
import type { WebhookConfig } from '../config.js';
import { AlertingError } from '../errors.js';
import type { AlertingTelemetry } from '../telemetry.js';
import { webhookBody } from './format.js';

/** One POST; throws AlertingError, retriable for network errors, time-outs, 408, 429 and 5xx. */
export async function postAlert(cfg: WebhookConfig, alert: Alert, signal?: AbortSignal): Promise<void> {
  let res: Response;
  try {
    res = await fetch(cfg.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hooklog-alert-id': alert.alert_id, ...cfg.headers },
      body: webhookBody(alert, cfg.format),
      signal: signal
        ? AbortSignal.any([signal, AbortSignal.timeout(cfg.timeout_ms)])
        : AbortSignal.timeout(cfg.timeout_ms),
    });
  } catch (err) {
    throw new AlertingError('output_failed', `webhook ${cfg.name}: ${(err as Error).message}`, {
      retriable: true,
      cause: err,
    });
  }
  await res.arrayBuffer().catch(() => undefined);
  if (res.ok) return;
  const retriable = res.status >= 500 || res.status === 408 || res.status === 429;
  throw new AlertingError('output_failed', `webhook ${cfg.name}: HTTP ${res.status}`, { retriable });
}

export interface WebhookOutputOptions {
  readonly stream: Stream;
  readonly alertsTopic: string;
  readonly group: string;
  readonly config: WebhookConfig;
  readonly telemetry: AlertingTelemetry;
  readonly signal: AbortSignal;
  readonly retryPolicy?: RetryPolicy;
}

export function startWebhookOutput(o: WebhookOutputOptions): Promise<Consumer> {
  const name = `webhook:${o.config.name}`;
  return o.stream.consume({
    topic: o.alertsTopic,
    group: `${o.group}.webhook.${o.config.name}`,
    maxBatchRecords: o.config.max_batch_records,
    maxBatchWaitMs: 100,
    maxBufferedRecords: o.config.queue_max_records,
    handler: async (batch) => {
      for (const rec of batch.records) {
        const alert = JSON.parse(rec.value.toString('utf8')) as Alert;
        // A grouped alert is posted once, as it opened: its later revisions (count, last event) are for the
        // store and the console, not another notification.
        if (alert.revision) continue;
        try {
          await retry(() => postAlert(o.config, alert, o.signal), {
            policy: o.retryPolicy ?? RetryPolicies.sink,
            retriable: (err) => err instanceof AlertingError && err.retriable,
            signal: o.signal,
            onRetry: (err, attempt, delayMs) => o.telemetry.deliveryRetry(name, err, attempt, delayMs),
          });
          o.telemetry.delivered(name);
        } catch (err) {
          // Stopping: leave the batch uncommitted; it is posted again after the restart.
          if (o.signal.aborted) throw err;
          o.telemetry.deliveryRejected(name, alert.alert_id, err);
        }
      }
    },
  });
}
