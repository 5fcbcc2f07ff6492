/**
 * The response component's events, one function each: counts in the process
 * registry (labels: configured org ids and our own closed lists, never payload
 * values) and logs through a child logger bound to `component: response`.
 * User ids are logged (operators need to know whom an action touched), never
 * logins, claims or tokens.
 */
import type { Logger } from '../../platform/log.js';
import { counter } from '../../platform/metrics.js';
import type { RiskChange } from '../../schemas/risk.js';

export interface ResponseCounters {
  setsSent: number;
  setsRefused: number;
  setRetries: number;
  actions: Record<string, number>;
  invalid: number;
  /** Batches whose handling failed (offered again), by topic: a record step or a call that did not get through. */
  batchFailures: Record<string, number>;
}

export type ResponseTelemetry = ReturnType<typeof createResponseTelemetry>;

export function createResponseTelemetry(logger: Logger) {
  const log = logger.child({ component: 'response' });
  const sets = counter({
    name: 'hooklog_ssf_sets_total',
    help: "SETs pushed to an org, by result (sent: 2xx; failed: refused with 4xx, dead-lettered) and the receiver's err code.",
    labelNames: ['org', 'result', 'err'],
  });
  const retries = counter({
    name: 'hooklog_ssf_set_retries_total',
    help: 'SET pushes that failed transiently (5xx, network) and will be sent again, byte-identical.',
    labelNames: ['org'],
  });
  const actions = counter({
    name: 'hooklog_response_actions_total',
    help: 'Response actions by result: requested, awaiting_approval, dry_run, not_allowed, approved, started, done, failed, uncertain, cancelled.',
    labelNames: ['org', 'action', 'result'],
  });
  const counters: ResponseCounters = {
    setsSent: 0,
    setsRefused: 0,
    setRetries: 0,
    actions: {},
    invalid: 0,
    batchFailures: {},
  };
  return {
    log,
    counters,
    setSent(org: string, jti: string, c: RiskChange) {
      counters.setsSent++;
      sets.inc({ org, result: 'sent', err: '' });
      log.info(
        { org, jti, user_id: c.entity.id, previous: c.previous, current: c.current, rule_id: c.rule_id },
        'set_sent',
      );
    },
    setRefused(org: string, jti: string, status: number, err: string, description: string) {
      counters.setsRefused++;
      sets.inc({ org, result: 'failed', err });
      log.error(
        { org, jti, status, err, description },
        'set_refused: the receiver refused the SET; dead-lettered, not retried (check the provider registration)',
      );
    },
    setRetry(org: string, jti: string, err: unknown) {
      counters.setRetries++;
      retries.inc({ org });
      log.warn({ org, jti, err }, 'set_delivery_failed; retrying the same SET');
    },
    action(org: string, action: string, result: string, extra: Record<string, unknown> = {}) {
      counters.actions[result] = (counters.actions[result] ?? 0) + 1;
      actions.inc({ org, action, result });
      const level = result === 'failed' || result === 'uncertain' ? 'warn' : 'info';
      log[level]({ org, action, result, ...extra }, `action_${result}`);
    },
    invalidChange(partition: number, offset: number, reason: string) {
      counters.invalid++;
      log.warn({ partition, offset, reason }, 'invalid risk change; dead-lettered');
    },
    invalidAction(partition: number, offset: number, reason: string) {
      counters.invalid++;
      log.warn({ partition, offset, reason }, 'invalid record on the actions topic; skipped');
    },
    batchFailed(topic: string, partition: number, attempt: number, err: unknown) {
      counters.batchFailures[topic] = (counters.batchFailures[topic] ?? 0) + 1;
      log.warn({ topic, partition, attempt, err }, 'response batch failed; it is offered again');
    },
  };
}
