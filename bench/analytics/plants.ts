/**
 * Planted attacks, one or more per named query, in org `acme` (org 0), on the
 * second generated day; org `globex` (org 1) is the clean control. Each plant
 * comes with what its query must find and what it must not (a similar but
 * innocent user, IP or session, or a control org where it must find nothing).
 *
 * acme users 2..39 are reserved: the background leaves them alone, so their
 * whole timeline is the one written here (an innocent traveller stays
 * innocent only if no random sign-in lands between its two cities).
 */
import { FAR_PLACES, HOSTING, NETWORKS, PLACES, type Network } from './catalog.js';
import {
  eventBy,
  orgName,
  user,
  userTarget,
  type EventSpec,
  type Generated,
  type GenOptions,
  type Silence,
  type User,
} from './generate.js';

export const ATTACKED = orgName(0);
export const CONTROL = orgName(1);
export const RESERVED = { org: ATTACKED, from: 2, to: 40 } as const;
export const MIN_USERS_PER_ORG = RESERVED.to;

export const SPRAY_IP = '167.99.50.50';
export const OFFICE_IP = '198.51.100.10';

/** What one query must find in the attacked org, and what it must not. */
export interface Expectation {
  readonly query: string;
  readonly params?: Readonly<Record<string, string>>;
  readonly column: string;
  readonly found: string;
  /** A value of `column` that must not appear (an innocent look-alike). */
  readonly absent?: string;
  /** An org where the query must return no row at all. */
  readonly controlOrg?: string;
}

export interface Plants {
  readonly events: Generated[];
  readonly deadletters: Array<Record<string, unknown>>;
  readonly silence: Silence;
  readonly expectations: Expectation[];
}

const H = 3_600_000;
const M = 60_000;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** `YYYY-MM-DD hh:mm:ss`, as ClickHouse prints a DateTime. */
function chTime(ms: number): string {
  return iso(ms).slice(0, 19).replace('T', ' ');
}

export function plant(opts: GenOptions): Plants {
  if (opts.usersPerOrg < MIN_USERS_PER_ORG || opts.orgs < 2 || opts.days < 2)
    throw new Error(`plants need ≥ 2 orgs, ≥ ${MIN_USERS_PER_ORG} users per org, ≥ 2 days`);
  const day0 = opts.start.getTime();
  const t0 = day0 + 24 * H;
  const out: Generated[] = [];
  const u = (i: number): User => user(0, i);
  const admin = u(0);
  const emit = (s: Partial<EventSpec> & { at: number; type: string }, who: User = admin): void => {
    out.push({ org: ATTACKED, event: eventBy(who, s) });
  };
  const attackerAt = (n: number, net: Network = HOSTING) => ({
    place: FAR_PLACES.lagos,
    network: net,
    ip: `${net.prefix}.7.${n}`,
  });
  // A failed sign-in has no session yet: the service logs externalSessionId "unknown".
  const failure = {
    type: 'user.session.start',
    result: 'FAILURE',
    reason: 'INVALID_CREDENTIALS',
    session: 'unknown',
  } as const;
  const signIn = (who: User, at: number, where: Partial<EventSpec> = {}) =>
    emit({ at, type: 'user.session.start', ...where }, who);

  // Brute force: 30 failures against user2 in 20 minutes; user3 fails 3 times.
  for (let k = 0; k < 30; k++) emit({ at: t0 + 1 * H + k * 40_000, ...failure, ...attackerAt(1 + (k % 3)) }, u(2));
  for (let k = 0; k < 3; k++) emit({ at: t0 + 1 * H + k * M, ...failure }, u(3));
  // Password spraying: one IP, 25 users, 20 minutes; the office IP fails for 4 users.
  for (let k = 0; k < 25; k++)
    emit(
      { at: t0 + 3 * H + k * 48_000, ...failure, place: FAR_PLACES.lagos, network: HOSTING, ip: SPRAY_IP },
      u(5 + k),
    );
  for (let k = 0; k < 4; k++) emit({ at: t0 + 5 * H + k * M, ...failure, ip: OFFICE_IP }, u(6 + k));
  emit({
    at: t0 + 3 * H + 30 * M,
    type: 'security.threat.detected',
    result: 'DENY',
    reason: 'Password Spray',
    place: FAR_PLACES.lagos,
    network: HOSTING,
    ip: SPRAY_IP,
  });
  // MFA fatigue: user4 gets 8 pushes and denies 7 in 15 minutes; user10 denies one.
  for (let k = 0; k < 8; k++)
    emit(
      { at: t0 + 6 * H + k * 2 * M, type: 'system.push.send_factor_verify_push', targets: [userTarget(u(4))] },
      u(4),
    );
  for (let k = 0; k < 7; k++)
    emit(
      {
        at: t0 + 6 * H + k * 2 * M + 30_000,
        type: 'user.mfa.okta_verify.deny_push',
        result: 'FAILURE',
        reason: 'User rejected Okta push verify',
      },
      u(4),
    );
  emit(
    {
      at: t0 + 6 * H,
      type: 'user.mfa.okta_verify.deny_push',
      result: 'FAILURE',
      reason: 'User rejected Okta push verify',
    },
    u(10),
  );
  // Factors: user11 enrols; user12's factors are reset and 20 minutes later user12 is made super admin and mints an
  // API token; user13 is granted admin, no reset.
  emit(
    {
      at: t0 + 2 * H,
      type: 'user.mfa.factor.activate',
      message: 'Activate factor for user',
      targets: [userTarget(u(11))],
    },
    u(11),
  );
  emit({
    at: t0 + 7 * H,
    type: 'user.mfa.factor.reset_all',
    message: 'Reset all factors for user',
    targets: [userTarget(u(12))],
  });
  const superAdmin = {
    id: 'SUPER_ADMIN',
    type: 'ROLE',
    alternateId: 'Super Administrator',
    displayName: 'Super Administrator',
  };
  emit({
    at: t0 + 7 * H + 20 * M,
    type: 'user.account.privilege.grant',
    message: 'Grant user privilege',
    targets: [userTarget(u(12)), superAdmin],
  });
  emit(
    {
      at: t0 + 7 * H + 40 * M,
      type: 'system.api_token.create',
      message: 'Create API token',
      targets: [{ id: '00Tplanted', type: 'Token', alternateId: 'unknown', displayName: 'backup-sync' }],
    },
    u(12),
  );
  emit({
    at: t0 + 8 * H,
    type: 'user.account.privilege.grant',
    message: 'Grant user privilege',
    targets: [userTarget(u(13)), superAdmin],
  });
  // Session hijack and impossible travel: user14's session reused from Moscow 30 minutes later.
  signIn(u(14), day0 + 9 * H);
  signIn(u(14), t0 + 9 * H);
  signIn(u(14), t0 + 9 * H + 30 * M, {
    place: FAR_PLACES.moscow,
    network: HOSTING,
    ip: '167.99.14.14',
    agent: u(20).agent,
  });
  // An honest traveller: user15 home (Austin) then London 12.5 hours later.
  signIn(u(15), t0 + 1 * H);
  signIn(u(15), t0 + 13 * H + 30 * M, {
    place: PLACES[7]!,
    network: NETWORKS[5]!,
    ip: '86.128.15.15',
    session: `${u(15).session}-ldn`,
  });
  // New country / network: user16 usually home, then Sao Paulo; user17 usually home and Berlin, then Berlin again;
  // user18 home, then a hosting network.
  for (const h of [2, 5, 8]) signIn(u(16), day0 + h * H);
  signIn(u(16), t0 + 18 * H, { place: FAR_PLACES.saoPaulo, network: u(16).network, ip: u(16).ip });
  const berlin = { place: PLACES[8]!, network: NETWORKS[4]!, ip: '91.64.17.17', session: `${u(17).session}-ber` };
  signIn(u(17), day0 + 3 * H);
  signIn(u(17), day0 + 20 * H, berlin);
  signIn(u(17), t0 + 18 * H, berlin);
  signIn(u(18), day0 + 4 * H);
  signIn(u(18), t0 + 19 * H, { network: HOSTING, ip: '167.99.18.18' });
  // Lifecycle: create and activate user19, suspend user20, deactivate user21.
  emit({ at: t0 + 12 * H, type: 'user.lifecycle.create', targets: [userTarget(u(19))] });
  emit({ at: t0 + 12 * H + M, type: 'user.lifecycle.activate', targets: [userTarget(u(19))] });
  emit({ at: t0 + 12 * H + 2 * M, type: 'user.lifecycle.suspend', targets: [userTarget(u(20))] });
  emit({ at: t0 + 12 * H + 3 * M, type: 'user.lifecycle.deactivate', targets: [userTarget(u(21))] });
  // Admin console from a hosting network; impersonation.
  emit({ at: t0 + 20 * H, type: 'user.session.access_admin_app', ...attackerAt(23) }, u(23));
  emit(
    {
      at: t0 + 21 * H,
      type: 'user.session.impersonation.grant',
      targets: [{ id: 'support', type: 'User', alternateId: 'support@vendor.example', displayName: 'Vendor support' }],
    },
    u(22),
  );
  // Configuration changes, one per area.
  const changes: Array<[string, string, string, string]> = [
    ['policy_changes', 'policy.rule.update', 'PolicyRule', 'Allow legacy authentication'],
    ['zone_changes', 'zone.update', 'NetworkZone', 'Corporate blocklist'],
    ['trusted_origin_changes', 'trustedorigin.create', 'TrustedOrigin', 'https://evil.example.net'],
    ['idp_changes', 'system.idp.lifecycle.create', 'IdentityProvider', 'Rogue SAML IdP'],
    ['oauth_client_changes', 'app.oauth2.client.read_client_secret', 'AppInstance', 'CI deploy client'],
    ['authorization_server_changes', 'app.oauth2.as.key.rollover', 'AuthorizationServer', 'custom-as'],
    ['hook_changes', 'event_hook.created', 'EventHook', 'exfil-hook'],
  ];
  changes.forEach(([, type, ttype, name], k) =>
    emit({
      at: t0 + 12 * H + 30 * M + k * M,
      type,
      targets: [{ id: `plant${k}`, type: ttype, alternateId: name, displayName: name }],
    }),
  );
  emit({
    at: t0 + 12 * H + 45 * M,
    type: 'application.user_membership.add',
    targets: [
      { id: '0oa1aws0000000000004', type: 'AppInstance', alternateId: 'AWS', displayName: 'AWS IAM Identity Center' },
      userTarget(u(24)),
    ],
  });
  // A burst of rate-limit violations.
  for (let k = 0; k < 40; k++)
    emit({
      at: t0 + 11 * H + k * 30_000,
      type: 'system.org.rate_limit.violation',
      result: 'DENY',
      message: 'Rate limit violation',
    });

  // Two hook deliveries the service gave up on (hook_deliveries_lost; arrivals for hook_coverage are planted by the
  // test loader).
  for (let k = 0; k < 2; k++) {
    emit({
      at: t0 + 13 * H + k * M,
      type: 'event_hook.delivery',
      result: 'FAILURE',
      message: 'Event hook delivery',
      targets: [{ id: 'whoPlanted0001', type: 'EventHook', alternateId: 'hooklog', displayName: 'hooklog' }],
    });
  }
  // One uuid on two different events (reused_uuids): not copies of one event, so two rows. The service never
  // does this; samples and fixtures do.
  const reused = ['system.import.user.complete', 'system.import.user.match'].map((type, k) => {
    emit({ at: t0 + 12 * H + k * M, type });
    return out[out.length - 1]!.event;
  });
  reused[1]!['uuid'] = reused[0]!['uuid'];
  const gap = { from: t0 + 14 * H, to: t0 + 17 * H };
  const deadletters = [0, 1, 2].map((k) => ({
    received_at: chTime(t0 + 10 * H + k * M) + '.000',
    origin: 'clickhouse-sink',
    reason: 'event has no uuid (missing, empty or not a string)',
    topic: 'hooklog.logs',
    partition: 0,
    offset: k,
    org: ATTACKED,
    raw: '{"published":"2026-01-01T00:00:00Z"}',
    dl_partition: 0,
    dl_offset: 100_000 + k,
  }));
  const after = { since: iso(t0) };
  const expectations: Expectation[] = [
    { query: 'signin_failures_by_user', column: 'user', found: u(2).login, absent: u(1).login },
    { query: 'signin_failures_by_ip', column: 'ip', found: SPRAY_IP, absent: u(1).ip },
    { query: 'password_spraying', column: 'ip', found: SPRAY_IP, absent: OFFICE_IP },
    { query: 'brute_force', column: 'user', found: u(2).login, absent: u(3).login },
    { query: 'mfa_fatigue', column: 'user', found: u(4).login, absent: u(10).login },
    { query: 'factor_enrollments', column: 'user', found: u(11).login, absent: u(12).login },
    { query: 'factor_resets', column: 'user', found: u(12).login, absent: u(11).login },
    {
      query: 'factor_reset_before_privilege_grant',
      params: { window_minutes: '60' },
      column: 'user',
      found: u(12).login,
      absent: u(13).login,
    },
    { query: 'admin_role_grants', column: 'user', found: u(13).login, absent: u(11).login },
    { query: 'api_token_changes', column: 'actor', found: u(12).login, controlOrg: CONTROL },
    { query: 'session_ip_change', column: 'session', found: u(14).session, absent: u(15).session },
    { query: 'session_impersonation', column: 'actor', found: u(22).login, controlOrg: CONTROL },
    { query: 'admin_console_access', column: 'user', found: u(23).login, controlOrg: CONTROL },
    {
      query: 'new_country_for_user',
      params: { ...after, baseline_days: '1' },
      column: 'user',
      found: u(16).login,
      absent: u(17).login,
    },
    {
      query: 'new_asn_for_user',
      params: { ...after, baseline_days: '1' },
      column: 'user',
      found: u(18).login,
      absent: u(17).login,
    },
    { query: 'impossible_travel', column: 'user', found: u(14).login, absent: u(15).login },
    { query: 'user_lifecycle', column: 'user', found: u(21).login, absent: u(1).login },
    ...changes.map(([query, , , name]) => ({ query, column: 'target', found: name, controlOrg: CONTROL })),
    { query: 'app_assignment_changes', column: 'assignee', found: u(24).login, controlOrg: CONTROL },
    {
      query: 'rate_limit_violations',
      column: 'event_type',
      found: 'system.org.rate_limit.violation',
      controlOrg: CONTROL,
    },
    { query: 'threat_detections', column: 'ip', found: SPRAY_IP, controlOrg: CONTROL },
    {
      query: 'event_volume_gaps',
      params: { max_events: '0' },
      column: 'hour',
      found: chTime(gap.from + H),
      controlOrg: CONTROL,
    },
    { query: 'hook_deliveries_lost', column: 'hook', found: 'whoPlanted0001', controlOrg: CONTROL },
    { query: 'hook_coverage', column: 'event_type', found: 'system.org.rate_limit.violation', controlOrg: CONTROL },
    { query: 'hook_latency', column: 'p50_ms', found: '1500', controlOrg: CONTROL },
    { query: 'reused_uuids', column: 'uuid', found: String(reused[0]!['uuid']), controlOrg: CONTROL },
    {
      query: 'deadletter_summary',
      column: 'reason',
      found: 'event has no uuid (missing, empty or not a string)',
      controlOrg: CONTROL,
    },
  ];
  return { events: out, deadletters, silence: [{ org: ATTACKED, ...gap }], expectations };
}
