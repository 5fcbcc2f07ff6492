/**
 * How complete the event hooks are, from `arrivals` (migration 010): which
 * paths brought each event, how late the hook was, and the deliveries the
 * service reported lost. `hooklog coverage` and `/metrics` show the same
 * figures.
 */
import { EVENTS, IN_RANGE, target, type NamedQuery } from '../query.js';

/**
 * Per event in range: its type and hour, whether the hook and the System Log (poller, reconcile or backfill) brought
 * it, hook latency. Events the SSF receiver appended (path `ssf`) are neither and are left out.
 */
const PER_EVENT = `SELECT uuid, any(event_type) AS type, toStartOfHour(any(published)) AS hour,
           max(path = 'hook') AS by_hook, max(path IN ('system-log', 'backfill')) AS by_log,
           if(by_hook, dateDiff('millisecond', any(published), minIf(first_received, path = 'hook')), NULL) AS hook_latency_ms
    FROM {db}.arrivals
    WHERE ${IN_RANGE} AND event_type != 'event_hook.delivery' AND path != 'ssf'
    GROUP BY uuid`;

export const coverageQueries: readonly NamedQuery[] = [
  {
    name: 'hook_coverage',
    area: 'hooklog',
    description:
      'Per hour and event type: events delivered by hooks only, by the System Log only (the hooks missed them), by both; hook latency (receipt − published) p50/p99 in ms.',
    params: [],
    sql: `SELECT hour, type AS event_type, countIf(by_hook AND NOT by_log) AS hooks_only, countIf(by_log AND NOT by_hook) AS log_only,
       countIf(by_hook AND by_log) AS both, count() AS events,
       round(quantileExact(0.5)(hook_latency_ms)) AS hook_p50_ms, round(quantileExact(0.99)(hook_latency_ms)) AS hook_p99_ms
FROM (${PER_EVENT})
GROUP BY hour, type
ORDER BY hour, type
LIMIT {limit:UInt32}`,
  },
  {
    name: 'hook_latency',
    area: 'hooklog',
    description:
      'Hook latency (receipt − published) over the whole range, in ms: p50, p99 and max, with the events the hooks delivered.',
    params: [],
    sql: `SELECT count() AS events, round(quantileExact(0.5)(hook_latency_ms)) AS p50_ms, round(quantileExact(0.99)(hook_latency_ms)) AS p99_ms,
       max(hook_latency_ms) AS max_ms
FROM (${PER_EVENT})
WHERE by_hook
HAVING count() > 0
LIMIT {limit:UInt32}`,
  },
  {
    name: 'hook_deliveries_lost',
    area: 'hooklog',
    description: 'Hook deliveries the identity service gave up on (event_hook.delivery failures), per hour and hook.',
    params: [],
    sql: `SELECT toStartOfHour(published) AS hour, ${target('EventHook', 'id')} AS hook, count() AS lost
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type = 'event_hook.delivery' AND outcome_result NOT IN ('SUCCESS', 'ALLOW')
GROUP BY hour, hook
ORDER BY hour, hook
LIMIT {limit:UInt32}`,
  },
];
