/**
 * Floors of the queries over every org that read a value of every event in range (bench/analytics/run.ts prints
 * them beside the queries): each one's core step alone, over the same rows read the same way (FINAL, the same
 * filters), grouping or ordering them by the same keys and counting, with none of the query's own aggregates,
 * narrowing, joins or output. A query close to its floor cannot be made much faster by writing it differently
 * over the events; only reading fewer rows (a summary kept per closed day) or more cores can.
 */
import { EVENTS, IN_RANGE, SIGN_IN_TYPES, TIME_BUCKET } from '../../analytics/query.js';
import { BASELINE_RANGE, OK_SIGN_IN, SESSION_ROWS, TRAVELLERS } from '../../analytics/queries/sessions.js';
import { MFA_TYPES, MFA_USER } from '../../analytics/queries/sign-in.js';

const count = (inner: string) => `SELECT count() FROM (${inner})`;
const firstSeen = (column: string, known: string) =>
  count(
    `SELECT actor_id, ${column} FROM ${EVENTS} WHERE ((${IN_RANGE}) OR (${BASELINE_RANGE})) AND ${OK_SIGN_IN} AND ${known} GROUP BY 1, 2`,
  );

export const FLOORS: Readonly<Record<string, string>> = {
  brute_force: count(
    `SELECT actor_alternate_id, ${TIME_BUCKET} FROM ${EVENTS} WHERE ${IN_RANGE} AND event_type IN ${SIGN_IN_TYPES} GROUP BY 1, 2`,
  ),
  mfa_fatigue: count(
    `SELECT ${MFA_USER}, ${TIME_BUCKET} FROM ${EVENTS} WHERE ${IN_RANGE} AND event_type IN ${MFA_TYPES} GROUP BY 1, 2`,
  ),
  session_ip_change: count(`SELECT external_session_id FROM ${EVENTS} WHERE ${SESSION_ROWS} GROUP BY 1`),
  new_country_for_user: firstSeen('geo_country', "geo_country != ''"),
  new_asn_for_user: firstSeen('as_number', 'as_number != 0'),
  // The query's rows are the sign-ins of users seen at more than one place: its window sorts only those.
  impossible_travel: count(
    `SELECT lagInFrame(published) OVER (PARTITION BY actor_id ORDER BY published ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
     FROM ${EVENTS} WHERE ${IN_RANGE} AND ${OK_SIGN_IN} AND geo_lat IS NOT NULL AND geo_lon IS NOT NULL AND ${TRAVELLERS}`,
  ),
  reused_uuids: count(`SELECT cityHash64(uuid) FROM ${EVENTS} WHERE ${IN_RANGE} GROUP BY 1 HAVING count() > 1`),
};
