/** The org and hooklog themselves: rate limits, threats, event volume and its gaps, reused uuids, dead letters. */
import { EVENTS, IN_RANGE, ORG_MATCH, type NamedQuery } from '../query.js';

const REUSED_UUIDS = (
  narrow: string,
) => `SELECT uuid, count() AS events, groupArray(event_type) AS event_types, groupArray(published) AS published_at,
       groupArray(source) AS sources
FROM ${EVENTS}
WHERE ${IN_RANGE} ${narrow}
GROUP BY uuid
HAVING events > 1
ORDER BY uuid
LIMIT {limit:UInt32}`;

export const operationsQueries: readonly NamedQuery[] = [
  {
    name: 'rate_limit_violations',
    area: 'rate limits',
    description: 'Rate-limit and concurrency-limit violations per hour and kind, with the URIs or clients named.',
    params: [],
    sql: `SELECT toStartOfHour(published) AS hour, event_type, count() AS violations, groupUniqArray(5)(display_message) AS messages,
       groupUniqArray(5)(actor_alternate_id) AS actors
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ('system.org.rate_limit.violation', 'system.operation.rate_limit.violation', 'system.client.rate_limit.violation',
                                     'system.client.concurrency_rate_limit.violation', 'core.concurrency.org.limit.violation', 'app.oauth2.client_id_rate_limit_violation')
GROUP BY hour, event_type
ORDER BY hour, violations DESC
LIMIT {limit:UInt32}`,
  },
  {
    name: 'threat_detections',
    area: 'threats',
    description: "The service's own threat and risk detections (ThreatInsight, user risk), by IP and reason.",
    params: [],
    sql: `SELECT toString(client_ip) AS ip, event_type, outcome_reason AS reason, count() AS detections, groupUniqArray(5)(actor_alternate_id) AS actors,
       min(published) AS first, max(published) AS last
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ('security.threat.detected', 'user.risk.detect', 'user.risk.change', 'security.attack.start', 'security.session.detect_client_roaming')
GROUP BY ip, event_type, reason
ORDER BY detections DESC
LIMIT {limit:UInt32}`,
  },
  {
    name: 'event_volume_gaps',
    area: 'volume',
    description:
      'Events per hour for the org, every hour of the range present (zero-filled); `max_events` keeps only hours at or below it (0: the gaps).',
    params: [
      {
        name: 'max_events',
        kind: 'uint',
        description: 'Only hours with at most this many events; omit for every hour.',
        default: 4_294_967_295,
      },
    ],
    sql: `SELECT hour, events, events = 0 AS gap
FROM (
    SELECT toStartOfHour(toDateTime(published, 'UTC')) AS hour, count() AS events
    FROM ${EVENTS}
    WHERE ${IN_RANGE}
    GROUP BY hour
    ORDER BY hour WITH FILL
        FROM toStartOfHour(toDateTime({since:DateTime64(3, 'UTC')}, 'UTC'))
        TO toDateTime({until:DateTime64(3, 'UTC')}, 'UTC')
        STEP toIntervalHour(1)
)
WHERE events <= {max_events:UInt32}
ORDER BY hour
LIMIT {limit:UInt32}`,
  },
  {
    name: 'reused_uuids',
    area: 'hooklog',
    description:
      "Uuids carried by more than one event in the range (different eventType or published): not copies of one event, so stored apart. The service's own uuids are unique; reuse points at the sender.",
    params: [],
    sql: REUSED_UUIDS(''),
    // Grouping every org's events by uuid string, three arrays per uuid, is what costs: a uuid carried twice has a
    // hash carried twice, and counting hashes needs neither string keys nor arrays, so only those uuids are grouped.
    allOrgsSql: REUSED_UUIDS(
      `AND cityHash64(uuid) IN (SELECT cityHash64(uuid) FROM ${EVENTS} WHERE ${IN_RANGE} GROUP BY 1 HAVING count() > 1)`,
    ),
  },
  {
    name: 'deadletter_summary',
    area: 'hooklog',
    description: 'Records hooklog could not store, by origin and reason: how many, first and last, and a sample.',
    params: [],
    sql: `SELECT origin, reason, count() AS records, min(received_at) AS first, max(received_at) AS last, any(substring(raw, 1, 200)) AS sample
FROM {db}.deadletter FINAL
WHERE ${ORG_MATCH} AND received_at >= {since:DateTime64(3, 'UTC')} AND received_at < {until:DateTime64(3, 'UTC')}
GROUP BY origin, reason
ORDER BY records DESC
LIMIT {limit:UInt32}`,
  },
];
