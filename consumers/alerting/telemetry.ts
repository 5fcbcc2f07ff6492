import type { Logger } from '../../platform/log.js';
import { counter } from '../../platform/metrics.js';

/**
 * Late events by rule: labelled by the rule's id and kind only (both from the loaded rules, so bounded by the
 * config), never by org, user or any other value an event carries.
 */
const lateEvents = counter<'rule' | 'kind'>({
  name: 'hooklog_alerting_late_events_total',
  help: 'Events a rule needing event order (threshold, distinct, sequence, temporal, stateful, first_seen) did not take because they arrived behind the watermark: older than the newest event time of their partition minus alerting.allowed_lateness_ms. Match and absence rules still see them. hooklog status shows the last one per rule and org.',
  labelNames: ['rule', 'kind'],
});

/** Late events a batch made durable for one rule and org (engine.ts `lateRules`). */
export interface LateReport {
  readonly rule: string;
  readonly kind: string;
  readonly org: string;
  readonly partition: number;
  /** New late events since the last report. */
  readonly events: number;
  /** The last one's event time and the watermark it missed (epoch ms). */
  readonly lastEventMs: number;
  readonly watermarkMs: number;
  readonly allowedLatenessMs: number;
}

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
    /**
     * Counted each time; logged as a warning whose identity is the rule and org (log-repeats.ts): the first
     * line at once, then a summary with the count once per log.repeat_interval_s while it goes on.
     */
    late(r: LateReport) {
      lateEvents.inc({ rule: r.rule, kind: r.kind }, r.events);
      log.warn(
        {
          org: r.org,
          rule: r.rule,
          kind: r.kind,
          partition: r.partition,
          events: r.events,
          last_event_at: new Date(r.lastEventMs).toISOString(),
          missed_watermark: new Date(r.watermarkMs).toISOString(),
          late_by_ms: r.watermarkMs - r.lastEventMs,
          allowed_lateness_ms: r.allowedLatenessMs,
        },
        `late events not used by rule ${r.rule}: older than the watermark (newest event time - allowed_lateness_ms)`,
      );
    },
    deliveryRejected(output: string, alertId: string, err: unknown) {
      counters.deliveryRejected++;
      log.error({ output, alertId, err }, 'receiver refused the alert; not retried');
    },
  };
}

export type AlertingTelemetry = ReturnType<typeof createAlertingTelemetry>;
