/** Administration: user lifecycle, factors, privileges, API tokens and every kind of configuration change. */
import { changeLog, EVENTS, IN_RANGE, target, type NamedQuery } from '../query.js';

const WHO_TO_WHOM = `published, event_type, actor_alternate_id AS actor, ${target('User')} AS user, toString(client_ip) AS ip, outcome_result AS outcome`;

export const adminQueries: readonly NamedQuery[] = [
  {
    name: 'user_lifecycle',
    area: 'users',
    description: 'Users created, activated, suspended, unsuspended, deactivated, reactivated, deleted or locked out.',
    params: [],
    sql: `SELECT ${WHO_TO_WHOM}
FROM ${EVENTS}
WHERE ${IN_RANGE} AND (event_type LIKE 'user.lifecycle.%' OR event_type = 'user.account.lock')
ORDER BY published DESC
LIMIT {limit:UInt32}`,
  },
  {
    name: 'factor_enrollments',
    area: 'factors',
    description: 'MFA factors activated (enrolled) or updated, by user and factor.',
    params: [],
    sql: `SELECT ${WHO_TO_WHOM}, display_message
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ('user.mfa.factor.activate', 'user.mfa.factor.update', 'system.mfa.factor.activate')
ORDER BY published DESC
LIMIT {limit:UInt32}`,
  },
  {
    name: 'factor_resets',
    area: 'factors',
    description: 'MFA factors deactivated or reset (all factors at once included), and who did it.',
    params: [],
    sql: `SELECT ${WHO_TO_WHOM}, display_message
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ('user.mfa.factor.deactivate', 'user.mfa.factor.reset_all', 'system.mfa.factor.deactivate', 'user.mfa.factor.suspend')
ORDER BY published DESC
LIMIT {limit:UInt32}`,
  },
  {
    name: 'factor_reset_before_privilege_grant',
    area: 'privileges',
    description:
      'A user whose factors were reset and who was then granted a privilege within the window (account takeover to admin).',
    params: [
      {
        name: 'window_minutes',
        kind: 'uint',
        description: 'Most minutes between the reset and the grant.',
        default: 1440,
        min: 1,
        max: 43_200,
      },
    ],
    sql: `SELECT r.user AS user, r.at AS reset_at, r.by AS reset_by, g.at AS granted_at, g.by AS granted_by, g.what AS granted, dateDiff('minute', r.at, g.at) AS minutes_between
FROM (
    SELECT ${target('User', 'id')} AS uid, ${target('User')} AS user, published AS at, actor_alternate_id AS by
    FROM ${EVENTS}
    WHERE ${IN_RANGE} AND event_type IN ('user.mfa.factor.reset_all', 'user.mfa.factor.deactivate', 'system.mfa.factor.deactivate')
) AS r
INNER JOIN (
    SELECT ${target('User', 'id')} AS uid, published AS at, actor_alternate_id AS by, display_message AS what
    FROM ${EVENTS}
    WHERE ${IN_RANGE} AND event_type IN ('user.account.privilege.grant', 'group.privilege.grant', 'iam.role.assignment.create')
) AS g ON g.uid = r.uid
WHERE g.at >= r.at AND g.at <= r.at + toIntervalMinute({window_minutes:UInt32}) AND r.uid != ''
ORDER BY g.at
LIMIT {limit:UInt32}`,
  },
  {
    name: 'admin_role_grants',
    area: 'privileges',
    description: 'Administrator roles granted or revoked, to users or groups.',
    params: [],
    sql: `SELECT published, event_type, actor_alternate_id AS actor,
       if(${target('User')} != '', ${target('User')}, arrayStringConcat(target_display_name, ', ')) AS user, display_message, toString(client_ip) AS ip, outcome_result AS outcome
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ('user.account.privilege.grant', 'user.account.privilege.revoke', 'group.privilege.grant', 'group.privilege.revoke', 'iam.role.assignment.create', 'iam.role.assignment.delete')
ORDER BY published DESC
LIMIT {limit:UInt32}`,
  },
  {
    name: 'api_token_changes',
    area: 'privileges',
    description: "API tokens created, revoked or reset: long-lived credentials with their creator's rights.",
    params: [],
    sql: `SELECT published, event_type, actor_alternate_id AS actor, arrayStringConcat(target_display_name, ', ') AS token, toString(client_ip) AS ip, geo_country AS country, outcome_result AS outcome
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type LIKE 'system.api_token.%'
ORDER BY published DESC
LIMIT {limit:UInt32}`,
  },
  changeLog(
    'policy_changes',
    'policies',
    'Sign-on, password, MFA-enrolment and other policies, and their rules, created, changed, (de)activated or deleted.',
    ['policy.lifecycle.%', 'policy.rule.%'],
  ),
  changeLog(
    'zone_changes',
    'network zones',
    'Network zones created, changed, (de)activated or deleted (allow- and block-lists).',
    ['zone.%'],
  ),
  changeLog(
    'trusted_origin_changes',
    'trusted origins',
    'Trusted origins (CORS and redirect) created, changed or deleted.',
    ['trustedorigin.%'],
  ),
  changeLog('idp_changes', 'identity providers', 'Identity providers created, changed, (de)activated or deleted.', [
    'system.idp.lifecycle.%',
  ]),
  changeLog(
    'oauth_client_changes',
    'OAuth clients',
    'OAuth client applications registered, changed, secrets read or rotated.',
    ['app.oauth2.client.%', 'app.oauth2.client_%'],
  ),
  changeLog(
    'authorization_server_changes',
    'authorization servers',
    'Authorization servers, their policies, rules, scopes, claims and keys changed.',
    ['app.oauth2.as.%'],
  ),
  changeLog(
    'hook_changes',
    'hooks',
    'Event hooks and inline hooks created, verified, changed, (de)activated or deleted.',
    ['event_hook.%', 'inline_hook.%'],
  ),
  {
    name: 'app_assignment_changes',
    area: 'applications',
    description: 'Users and groups assigned to or removed from applications.',
    params: [],
    sql: `SELECT published, event_type, actor_alternate_id AS actor, ${target('AppInstance', 'display_name')} AS app,
       if(${target('User')} != '', ${target('User')}, ${target('UserGroup', 'display_name')}) AS assignee, outcome_result AS outcome
FROM ${EVENTS}
WHERE ${IN_RANGE} AND event_type IN ('application.user_membership.add', 'application.user_membership.remove', 'application.user_membership.change_username',
                                     'group.application_assignment.add', 'group.application_assignment.remove', 'group.application_assignment.update')
ORDER BY published DESC
LIMIT {limit:UInt32}`,
  },
];
