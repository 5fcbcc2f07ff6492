/** Where and how users sign in: session anomalies, new countries and networks, impossible travel. */
import { EVENTS, IN_RANGE, ORG_MATCH, SIGN_IN_TYPES, type NamedQuery } from '../query.js';

/** A user's successful sign-in (bench/analytics/floors.ts reads the same rows). */
export const OK_SIGN_IN = `event_type IN ${SIGN_IN_TYPES} AND outcome_result IN ('SUCCESS', 'ALLOW') AND actor_type = 'User'`;
const BASELINE_DAYS = {
  name: 'baseline_days',
  kind: 'uint',
  description: 'Days before `since` that define what is usual for each user.',
  default: 30,
  min: 1,
  max: 400,
} as const;
/** The `baseline_days` before `since`. */
export const BASELINE_RANGE = `${ORG_MATCH} AND published >= {since:DateTime64(3, 'UTC')} - toIntervalDay({baseline_days:UInt32}) AND published < {since:DateTime64(3, 'UTC')}`;

/** session_ip_change's events: in range, of a known session, from a known address. */
export const SESSION_ROWS = `${IN_RANGE} AND external_session_id NOT IN ('', 'unknown') AND client_ip IS NOT NULL`;
/**
 * impossible_travel's users: those seen at more than one place in range (only they can have travelled). A place is a
 * sign-in's coordinates, both known, as in the window's rows. Two places differ in latitude or in longitude, so each
 * user's least and greatest of both tell it with four numbers, where a set of distinct places cost every user a hash
 * set (about a sixth of the query over every org). A -0 beside a 0 is one place here and was two in the set: no
 * distance either way, so no trip.
 */
export const TRAVELLERS = `actor_id IN (SELECT actor_id FROM ${EVENTS} WHERE ${IN_RANGE} AND ${OK_SIGN_IN} AND geo_lat IS NOT NULL AND geo_lon IS NOT NULL
    GROUP BY actor_id HAVING min(geo_lat) != max(geo_lat) OR min(geo_lon) != max(geo_lon))`;

/**
 * Sign-ins in range whose `column` value the user never had in the baseline (users without a baseline are left out).
 */
function firstSeen(name: string, description: string, column: string, label: string, extra: string): NamedQuery {
  const baseline = `baseline AS (
    SELECT DISTINCT actor_id, ${column} AS v FROM ${EVENTS} WHERE ${BASELINE_RANGE} AND ${OK_SIGN_IN} ${extra}
)`;
  const firstSeenRows = `${IN_RANGE} AND ${OK_SIGN_IN} ${extra}
  AND actor_id IN (SELECT actor_id FROM baseline)
  AND (actor_id, ${column}) NOT IN (SELECT actor_id, v FROM baseline)`;
  const answer = (
    prewhere: string,
  ) => `SELECT actor_alternate_id AS user, ${column} AS ${label}, min(published) AS first_seen, count() AS sign_ins,
       groupUniqArray(5)(toString(client_ip)) AS ips, any(geo_city) AS city, any(as_org) AS network
FROM ${EVENTS}${prewhere}
WHERE ${firstSeenRows}
GROUP BY user, ${label}
ORDER BY first_seen
LIMIT {limit:UInt32}`;
  return {
    name,
    area: 'sessions',
    description,
    params: [BASELINE_DAYS],
    sql: `WITH ${baseline}
${answer('')}`,
    // Over every org, reading the answer's other columns (user, address, city, network) for every sign-in in range
    // cost more than deciding which few sign-ins are first seen. So the sign-ins are decided first, reading only
    // what decides, and the answer reads its columns only where their `published` is: PREWHERE on a sorting-key
    // column, so ClickHouse skips the rest before reading them, and exact under FINAL (an event's copies share
    // `published`, so a copy is kept or skipped with the others; the WHERE then decides on the folded values, as
    // above). Sign-ins of other events in the same millisecond are read too and left out by the WHERE.
    allOrgsSql: `WITH ${baseline},
first_seen_at AS (
    SELECT published FROM ${EVENTS} WHERE ${firstSeenRows}
)
${answer('\nPREWHERE published IN (SELECT published FROM first_seen_at)')}`,
  };
}

export const sessionQueries: readonly NamedQuery[] = [
  {
    name: 'session_ip_change',
    area: 'sessions',
    description: 'One session used from several IPs or countries (a stolen session cookie replayed elsewhere).',
    params: [
      { name: 'min_ips', kind: 'uint', description: 'Distinct IPs a session must be seen from.', default: 2, min: 2 },
    ],
    sql: `SELECT external_session_id AS session, any(actor_alternate_id) AS user, uniqExact(client_ip) AS ips, groupUniqArray(5)(toString(client_ip)) AS sample_ips,
       groupUniqArray(5)(geo_country) AS countries, groupUniqArray(5)(as_number) AS asns, min(published) AS first, max(published) AS last, count() AS events
FROM ${EVENTS}
WHERE ${SESSION_ROWS}
GROUP BY external_session_id HAVING ips >= {min_ips:UInt32}
ORDER BY ips DESC, first
LIMIT {limit:UInt32}`,
    // Over every org, the per-event work is what costs: a distinct-IP set and three capped arrays kept per session,
    // fed by every event. Grouped first by session and IP, each event only counts into its pair (and its capped
    // country and network arrays); the session then has one row per IP: their number is its distinct IPs, and up
    // to five countries or networks of its pairs' are up to five of its own. 1.25-1.33x at 100M events (BENCHMARKS.md).
    allOrgsSql: `SELECT session, any(pair_user) AS user, count() AS ips, groupUniqArray(5)(toString(ip)) AS sample_ips,
       groupUniqArrayArray(5)(pair_countries) AS countries, groupUniqArrayArray(5)(pair_asns) AS asns,
       min(pair_first) AS first, max(pair_last) AS last, sum(pair_events) AS events
FROM (
    SELECT external_session_id AS session, client_ip AS ip, any(actor_alternate_id) AS pair_user,
           groupUniqArray(5)(geo_country) AS pair_countries, groupUniqArray(5)(as_number) AS pair_asns,
           min(published) AS pair_first, max(published) AS pair_last, count() AS pair_events
    FROM ${EVENTS}
    WHERE ${SESSION_ROWS}
    GROUP BY external_session_id, client_ip
)
GROUP BY session HAVING ips >= {min_ips:UInt32}
ORDER BY ips DESC, first
LIMIT {limit:UInt32}`,
  },
  {
    name: 'session_impersonation',
    area: 'sessions',
    description: 'Impersonation granted, initiated or ended (support staff or admins acting as a user).',
    params: [],
    sql: `SELECT published, event_type, actor_alternate_id AS actor, arrayStringConcat(target_alternate_id, ', ') AS target, toString(client_ip) AS ip, outcome_result AS outcome
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type LIKE 'user.session.impersonation.%'
ORDER BY published DESC
LIMIT {limit:UInt32}`,
  },
  {
    name: 'admin_console_access',
    area: 'sessions',
    description: 'Sign-ins to the admin console, per user and IP: who reached the admin app, from where.',
    params: [],
    sql: `SELECT actor_alternate_id AS user, toString(client_ip) AS ip, any(geo_country) AS country, any(client_browser) AS browser,
       count() AS accesses, countIf(outcome_result != 'SUCCESS') AS denied, min(published) AS first, max(published) AS last
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type = 'user.session.access_admin_app'
GROUP BY user, client_ip
ORDER BY first
LIMIT {limit:UInt32}`,
  },
  firstSeen(
    'new_country_for_user',
    'Successful sign-ins from a country the user had not signed in from during the baseline.',
    'geo_country',
    'country',
    "AND geo_country != ''",
  ),
  firstSeen(
    'new_asn_for_user',
    'Successful sign-ins from a network (ASN) the user had not used during the baseline.',
    'as_number',
    'asn',
    'AND as_number != 0',
  ),
  {
    name: 'impossible_travel',
    area: 'sessions',
    description: 'Consecutive successful sign-ins of one user too far apart for the time between them.',
    params: [
      { name: 'min_km', kind: 'uint', description: 'Least distance between the two sign-ins.', default: 500 },
      {
        name: 'max_kmh',
        kind: 'uint',
        description: 'Speeds above this are impossible (an airliner flies ~900 km/h).',
        default: 1000,
        min: 1,
      },
    ],
    sql: `SELECT user, prev_at, at, prev_city, city, prev_ip, ip, round(km) AS km, round(km / greatest(dateDiff('second', prev_at, at), 60) * 3600) AS kmh
FROM (
    SELECT actor_alternate_id AS user, published AS at, geo_city AS city, toString(client_ip) AS ip, geo_lat AS lat, geo_lon AS lon,
           lagInFrame(published) OVER w AS prev_at, lagInFrame(geo_city) OVER w AS prev_city, lagInFrame(toString(client_ip)) OVER w AS prev_ip,
           lagInFrame(geo_lat) OVER w AS prev_lat, lagInFrame(geo_lon) OVER w AS prev_lon, row_number() OVER w AS n,
           greatCircleDistance(ifNull(prev_lon, 0), ifNull(prev_lat, 0), ifNull(lon, 0), ifNull(lat, 0)) / 1000 AS km
    FROM ${EVENTS}
    WHERE ${IN_RANGE} AND ${OK_SIGN_IN} AND geo_lat IS NOT NULL AND geo_lon IS NOT NULL
      -- Only users seen at more than one place can have travelled: the window then sorts far fewer rows.
      AND ${TRAVELLERS}
    WINDOW w AS (PARTITION BY actor_id ORDER BY published ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
)
WHERE n > 1 AND km >= {min_km:UInt32} AND km / greatest(dateDiff('second', prev_at, at), 60) * 3600 > {max_kmh:UInt32}
ORDER BY at
LIMIT {limit:UInt32}`,
  },
];
