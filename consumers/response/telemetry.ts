/**
 * The response component's events, one function each: counts in the process
 * registry (labels: configured org ids and our own closed lists, never payload
 * values) and logs through a child logger bound to `component: response`.
 * User ids are logged (operators need to know whom an action touched), never
 * logins, claims or tokens.
 */
import type { AttemptReply } from '../../platform/identity/client.js';
import type { Logger } from '../../platform/log.js';
import { counter } from '../../platform/metrics.js';
import type { RiskChange } from '../../schemas/risk.js';

export interface ResponseCounters {
  setsSent: number;
  setsRefused: number;
  /** Deliveries of a SET that failed past the client's retries (the whole delivery is offered again). */
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
  const setAttempts = counter({
    name: 'hooklog_ssf_set_attempts_total',
    help: "HTTP requests pushing SETs, by reply (2xx, 4xx, 429, 5xx, network): every one, the client's retries included.",
    labelNames: ['org', 'reply'],
  });
  const retries = counter({
    name: 'hooklog_ssf_set_retries_total',
    help: 'SET pushes sent again, byte-identical, after one that failed (5xx, 429, network): by the client within a delivery, or with the delivery offered again.',
    labelNames: ['org'],
  });
  const actionAttempts = counter({
    name: 'hooklog_response_action_attempts_total',
    help: "HTTP requests of response actions' management calls, by reply (2xx, 4xx, 429, 5xx, network): every one, the client's retries included.",
    labelNames: ['org', 'action', 'reply'],
  });
  const actionRetries = counter({
    name: 'hooklog_response_action_retries_total',
    help: "Management calls of an action made again: the client's retries (5xx, 429, network; repeatable actions only), a repeat after a crash, a run after an approval of an uncertain one.",
    labelNames: ['org', 'action'],
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
    /** One HTTP request of a SET's push; `retry` when it is not the SET's first. */
    setAttempt(org: string, reply: AttemptReply, retry: boolean) {
      setAttempts.inc({ org, reply: replyClass(reply) });
      if (retry) retries.inc({ org });
    },
    setRetry(org: string, jti: string, err: unknown) {
      counters.setRetries++;
      log.warn({ org, jti, err }, 'set_delivery_failed; retrying the same SET');
    },
    /** One HTTP request of an action's call; `retry` when it is not the action's first. */
    actionAttempt(org: string, action: string, reply: AttemptReply, retry: boolean) {
      actionAttempts.inc({ org, action, reply: replyClass(reply) });
      if (retry) actionRetries.inc({ org, action });
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

/** A reply as a label: its status class, 429 on its own (a wait, not a failure), or `network`. */
function replyClass(reply: AttemptReply): string {
  if (reply === 'network') return 'network';
  return reply === 429 ? '429' : `${Math.floor(reply / 100)}xx`;
}
