/** What the risk fold logs and counts: one function per internal event, labels from closed sets only. */
import type { Logger } from '../../../platform/log.js';
import { counter } from '../../../platform/metrics.js';
import type { RiskChange } from '../../../schemas/risk.js';

const changesTotal = counter({
  name: 'hooklog_risk_changes_total',
  help: "Changes of a user's risk level, appended to <prefix>.risk-changes, by cause (finding, expiry) and the level reached.",
  labelNames: ['cause', 'current'] as const,
});
const skippedTotal = counter({
  name: 'hooklog_risk_alerts_skipped_total',
  help: 'Alerts whose risk counted for nothing, by reason: expired (older than its ttl when folded), invalid (not an alert, or its risk unreadable).',
  labelNames: ['reason'] as const,
});

export interface RiskCounters {
  changes: number;
  expired: number;
  invalid: number;
  writeFailures: number;
}

export type RiskTelemetry = ReturnType<typeof createRiskTelemetry>;

export function createRiskTelemetry(logger: Logger) {
  const log = logger.child({ component: 'risk' });
  const counters: RiskCounters = { changes: 0, expired: 0, invalid: 0, writeFailures: 0 };
  return {
    counters,
    log,
    changed(partition: number, changes: readonly RiskChange[]) {
      for (const c of changes) {
        counters.changes++;
        changesTotal.inc({ cause: c.cause, current: c.current });
        log.info(
          {
            partition,
            org: c.org,
            user: c.entity.id,
            change: c.change_id,
            cause: c.cause,
            rule: c.rule_id,
            alert: c.alert_id,
            previous: c.previous,
            current: c.current,
          },
          'risk level changed',
        );
      }
    },
    expiredOnArrival(n: number) {
      if (n === 0) return;
      counters.expired += n;
      skippedTotal.inc({ reason: 'expired' }, n);
    },
    invalid(partition: number, offset: number, why: string) {
      counters.invalid++;
      skippedTotal.inc({ reason: 'invalid' });
      log.warn({ partition, offset, why }, 'alert record unreadable for risk; skipped');
    },
    writeFailed(partition: number, err: unknown) {
      counters.writeFailures++;
      log.warn({ partition, err }, 'risk states + changes write failed; the partition is read again');
    },
    ignoredState(key: string, why: string) {
      log.warn({ key, why }, 'a <prefix>.risk record is unreadable; ignored');
    },
  };
}
