/** Sign-in failures and the attacks they reveal: password spraying, brute force, MFA fatigue. */
import {
  EVENTS,
  FAILED,
  target,
  IN_RANGE,
  SIGN_IN_TYPES,
  TIME_BUCKET,
  WINDOW_MINUTES,
  type NamedQuery,
} from '../query.js';

/** mfa_fatigue's events (bench/analytics/floors.ts reads the same rows). */
export const MFA_TYPES =
  "('user.mfa.okta_verify.deny_push', 'system.push.send_factor_verify_push', 'user.authentication.auth_via_mfa')";
/** Whom an MFA event is about: the actor when a user acted, else the user it targets. */
export const MFA_USER = `if(actor_type = 'User', actor_alternate_id, ${target('User')})`;
/** An MFA event that is a push denied. */
const DENIAL =
  "(event_type = 'user.mfa.okta_verify.deny_push' OR (event_type = 'user.authentication.auth_via_mfa' AND outcome_reason ILIKE '%denied%'))";
/** The buckets of mfa_fatigue's answer, whichever form finds them. */
const mfaFatigue = (prewhere: string, narrowing: string) => `SELECT ${MFA_USER} AS user,
       ${TIME_BUCKET} AS bucket,
       countIf(${DENIAL}) AS denials,
       countIf(event_type = 'system.push.send_factor_verify_push') AS pushes_sent,
       countIf(event_type = 'user.authentication.auth_via_mfa' AND outcome_result = 'SUCCESS') AS mfa_successes,
       groupUniqArray(5)(toString(client_ip)) AS ips
FROM ${EVENTS}${prewhere}
WHERE ${IN_RANGE} AND event_type IN ${MFA_TYPES}${narrowing}
GROUP BY user, bucket HAVING denials >= {min_denials:UInt32}
ORDER BY denials DESC, bucket
LIMIT {limit:UInt32}`;

/** The buckets of brute_force's answer, whichever form finds them. */
const bruteForce = (
  prewhere: string,
  narrowing: string,
) => `SELECT actor_alternate_id AS user, ${TIME_BUCKET} AS bucket,
       countIf(${FAILED}) AS failures, uniqExactIf(client_ip, ${FAILED}) AS ips,
       groupUniqArrayIf(5)(toString(client_ip), ${FAILED}) AS sample_ips, countIf(outcome_result = 'SUCCESS') AS successes
FROM ${EVENTS}${prewhere}
WHERE ${IN_RANGE} AND event_type IN ${SIGN_IN_TYPES}${narrowing}
GROUP BY user, bucket HAVING failures >= {min_failures:UInt32}
ORDER BY failures DESC, bucket
LIMIT {limit:UInt32}`;

export const signInQueries: readonly NamedQuery[] = [
  {
    name: 'signin_failures_by_user',
    area: 'sign-in',
    description: 'Failed sign-ins per user: how many, from how many IPs and countries, first and last.',
    params: [
      {
        name: 'min_failures',
        kind: 'uint',
        description: 'Only users with at least this many failures.',
        default: 1,
        min: 1,
      },
    ],
    sql: `SELECT actor_alternate_id AS user, count() AS failures, uniqExact(client_ip) AS ips, groupUniqArray(5)(geo_country) AS countries,
       groupUniqArray(5)(outcome_reason) AS reasons, min(published) AS first, max(published) AS last
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ${SIGN_IN_TYPES} AND ${FAILED}
GROUP BY user HAVING failures >= {min_failures:UInt32}
ORDER BY failures DESC, user
LIMIT {limit:UInt32}`,
  },
  {
    name: 'signin_failures_by_ip',
    area: 'sign-in',
    description: 'Failed sign-ins per client IP: how many, against how many users, where from.',
    params: [
      {
        name: 'min_failures',
        kind: 'uint',
        description: 'Only IPs with at least this many failures.',
        default: 1,
        min: 1,
      },
    ],
    sql: `SELECT toString(client_ip) AS ip, count() AS failures, uniqExact(actor_alternate_id) AS users, any(geo_country) AS country,
       any(as_org) AS network, min(published) AS first, max(published) AS last
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ${SIGN_IN_TYPES} AND ${FAILED}
GROUP BY client_ip HAVING failures >= {min_failures:UInt32}
ORDER BY failures DESC, ip
LIMIT {limit:UInt32}`,
  },
  {
    name: 'password_spraying',
    area: 'sign-in',
    description: 'One IP failing sign-ins against many distinct users within a time bucket (password spraying).',
    params: [
      WINDOW_MINUTES,
      {
        name: 'min_users',
        kind: 'uint',
        description: 'Distinct users an IP must fail against in one bucket.',
        default: 10,
        min: 2,
      },
    ],
    sql: `SELECT toString(client_ip) AS ip, ${TIME_BUCKET} AS bucket, uniqExact(actor_alternate_id) AS users, count() AS failures,
       groupUniqArray(10)(actor_alternate_id) AS sample_users, any(geo_country) AS country, any(client_user_agent) AS user_agent
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ${SIGN_IN_TYPES} AND ${FAILED}
GROUP BY client_ip, bucket HAVING users >= {min_users:UInt32}
ORDER BY users DESC, bucket
LIMIT {limit:UInt32}`,
  },
  {
    name: 'brute_force',
    area: 'sign-in',
    description: 'One user failing many sign-ins within a time bucket (brute force).',
    params: [
      WINDOW_MINUTES,
      {
        name: 'min_failures',
        kind: 'uint',
        description: 'Failures a user must have in one bucket.',
        default: 10,
        min: 2,
      },
    ],
    sql: bruteForce('', ''),
    // Over every org, a distinct-IP set and a capped array kept for every user's every bucket with a sign-in cost the
    // most (tens of millions of groups at 100M events of 500,000 users), for the few buckets with enough failures.
    // As mfa_fatigue: failures decide which buckets answer (the HAVING needs min_failures of them, at least 2), so
    // they are counted first by (user, bucket), reading only failed sign-ins' users; the answer then reads its
    // columns only for sign-ins in those buckets, by PREWHERE on sorting-key columns (event_type, published), exact
    // under FINAL because an event's copies share them, and the WHERE keeps only the failing users' sign-ins. A user
    // without a name is a group of its own in the one-org SQL; transform_null_in lets its NULL match itself in the IN.
    allOrgsSql: `WITH failing AS (
    SELECT actor_alternate_id AS user, ${TIME_BUCKET} AS bucket
    FROM ${EVENTS}
    PREWHERE event_type IN ${SIGN_IN_TYPES}
    WHERE ${IN_RANGE} AND ${FAILED}
    GROUP BY user, bucket HAVING count() >= {min_failures:UInt32}
)
${bruteForce(
  `\nPREWHERE event_type IN ${SIGN_IN_TYPES} AND ${TIME_BUCKET} IN (SELECT bucket FROM failing)`,
  `\n  AND (user, bucket) IN (SELECT user, bucket FROM failing)`,
)}
SETTINGS transform_null_in = 1`,
  },
  {
    name: 'mfa_fatigue',
    area: 'sign-in',
    description: 'Repeated push denials (or pushes sent) for one user in a time bucket: MFA fatigue / push bombing.',
    params: [
      WINDOW_MINUTES,
      {
        name: 'min_denials',
        kind: 'uint',
        description: 'Push denials a user must have in one bucket.',
        default: 5,
        min: 1,
      },
    ],
    sql: mfaFatigue('', ''),
    // Over every org, grouping every MFA event by whom it is about (the actor's and the targets' columns read for
    // each) cost the most, for the few buckets where pushes were denied. Denials decide which buckets answer (the
    // HAVING needs at least one), so they are grouped first, reading only denials' users; the answer then reads its
    // columns only for events in those buckets: PREWHERE on sorting-key columns (event_type, published), exact
    // under FINAL because an event's copies share them, and the WHERE then keeps only the denied users' events.
    allOrgsSql: `WITH denied AS (
    SELECT ${MFA_USER} AS user, ${TIME_BUCKET} AS bucket
    FROM ${EVENTS}
    PREWHERE event_type IN ('user.mfa.okta_verify.deny_push', 'user.authentication.auth_via_mfa')
    WHERE ${IN_RANGE} AND ${DENIAL}
    GROUP BY user, bucket HAVING count() >= {min_denials:UInt32}
)
${mfaFatigue(
  `\nPREWHERE event_type IN ${MFA_TYPES} AND ${TIME_BUCKET} IN (SELECT bucket FROM denied)`,
  `\n  AND (user, bucket) IN (SELECT user, bucket FROM denied)`,
)}`,
  },
];
