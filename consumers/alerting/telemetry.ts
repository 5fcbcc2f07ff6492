import type { Logger } from '../../platform/log.js';

/** Counters of the alerting consumer; also logged (never with payload fields beyond ids). */
export interface AlertingCounters {
  events: number;
  alerts: number;
  skippedRedelivered: number;
  invalidRecords: number;
  checkpointFailures: number;
  delivered: number;
  deliveryRetries: number;
  deliveryRejected: number;
}

export function createAlertingTelemetry(logger: Logger) {
  const log = logger.child({ component: 'alerting' });
  const counters: AlertingCounters = {
    events: 0,
    alerts: 0,
    skippedRedelivered: 0,
    invalidRecords: 0,
    checkpointFailures: 0,
    delivered: 0,
    deliveryRetries: 0,
    deliveryRejected: 0,
  };
  return {
    counters,
    log,
    evaluated(partition: number, events: number, alerts: number) {
      counters.events += events;
      counters.alerts += alerts;
      if (alerts) log.info({ partition, events, alerts }, 'alerts raised');
    },
    skipped(n: number) {
      counters.skippedRedelivered += n;
    },
    invalid(partition: number, offset: number) {
      counters.invalidRecords++;
      log.warn({ partition, offset }, 'record is not a JSON object; skipped by alerting');
    },
    checkpointFailed(partition: number, err: unknown) {
      counters.checkpointFailures++;
      log.warn({ partition, err }, 'alerts + checkpoint write failed; batch will be re-evaluated');
    },
    delivered(output: string) {
      counters.delivered++;
      void output;
    },
    deliveryRetry(output: string, err: unknown, attempt: number, delayMs: number) {
      counters.deliveryRetries++;
      log.warn({ output, attempt, delayMs, err }, 'alert delivery failed; retrying');
    },
    deliveryRejected(output: string, alertId: string, err: unknown) {
      counters.deliveryRejected++;
      log.error({ output, alertId, err }, 'receiver refused the alert; not retried');
    },
  };
}

export type AlertingTelemetry = ReturnType<typeof createAlertingTelemetry>;
