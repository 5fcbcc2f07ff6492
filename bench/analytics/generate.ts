/**
 * Generated System Log events: N orgs of U users each, signing in to apps,
 * getting tokens, being evaluated by policies, over D days. Shapes follow
 * the corpus (a full LogEvent: actor, client with user agent and geography,
 * securityContext, authenticationContext, debugContext, request.ipChain,
 * transaction, target). Deterministic for a seed.
 *
 * The background is clean on purpose: users sign in only from their home
 * city, network and IP, fail a sign-in rarely (and users whose index is 1
 * mod 5 never do), and no admin changes happen. plants.ts adds the attacks.
 */
import { AGENTS, APPS, MIX, NETWORKS, PLACES, type Agent, type Kind, type Network, type Place } from './catalog.js';
import { seededRandom } from '../../test/support/random.js';

export interface GenOptions {
  readonly orgs: number;
  readonly usersPerOrg: number;
  readonly days: number;
  readonly eventsPerUserPerDay: number;
  /** Start of the generated range (UTC midnight is easiest to reason about). */
  readonly start: Date;
  readonly seed?: number;
}

export function orgName(i: number): string {
  return i === 0 ? 'acme' : i === 1 ? 'globex' : `org-${String(i).padStart(3, '0')}`;
}

export interface User {
  readonly id: string;
  readonly login: string;
  readonly name: string;
  readonly place: Place;
  readonly network: Network;
  readonly ip: string;
  readonly agent: Agent;
  readonly session: string;
  /** Users whose index is 1 mod 5 never fail a sign-in: the clean controls. */
  readonly neverFails: boolean;
}

export function user(org: number, i: number): User {
  const network = NETWORKS[(org + i) % NETWORKS.length]!;
  return {
    id: `00u${String(org).padStart(4, '0')}${String(i).padStart(7, '0')}x4x7`.slice(0, 20),
    login: `user${i}@${orgName(org)}.example.com`,
    name: `User ${i}`,
    place: PLACES[(org * 7 + i) % PLACES.length]!,
    network,
    ip: `${network.prefix}.${(org * 31 + Math.floor(i / 250)) % 250}.${(i % 250) + 1}`,
    agent: AGENTS[i % AGENTS.length]!,
    session: `102${String(org).padStart(4, '0')}${String(i).padStart(7, '0')}sess`,
    neverFails: i % 5 === 1,
  };
}

export interface EventSpec {
  readonly at: number;
  readonly type: string;
  readonly actor: { id: string; type: string; alternateId: string; displayName: string };
  readonly place: Place;
  readonly network: Network;
  readonly ip: string;
  readonly agent: Agent;
  readonly session: string;
  readonly result?: string;
  readonly reason?: string | null;
  readonly message?: string;
  readonly targets?: ReadonlyArray<{ id: string; type: string; alternateId: string; displayName: string }>;
}

let uuidRandom = seededRandom(0x5eed);

/** Restarts uuid generation (each generation run is then reproducible). */
export function resetUuids(seed: number): void {
  uuidRandom = seededRandom(seed);
}

function hex(n: number): string {
  return Math.floor(uuidRandom() * 16 ** n)
    .toString(16)
    .padStart(n, '0');
}

/** A LogEvent as the service sends it. */
export function logEvent(s: EventSpec): Record<string, unknown> {
  const geo = {
    city: s.place.city,
    state: s.place.state,
    country: s.place.country,
    postalCode: s.place.postalCode,
    geolocation: { lat: s.place.lat, lon: s.place.lon },
  };
  const requestId = `Y${hex(12)}${hex(12)}AAA`;
  return {
    actor: { ...s.actor, detailEntry: null },
    client: {
      userAgent: { rawUserAgent: s.agent.raw, os: s.agent.os, browser: s.agent.browser },
      zone: 'null',
      device: s.agent.device,
      id: null,
      ipAddress: s.ip,
      geographicalContext: geo,
    },
    device: null,
    authenticationContext: {
      authenticationProvider: null,
      credentialProvider: null,
      credentialType: null,
      issuer: null,
      interface: null,
      authenticationStep: 0,
      externalSessionId: s.session,
    },
    displayMessage: s.message ?? s.type,
    eventType: s.type,
    outcome: { result: s.result ?? 'SUCCESS', reason: s.reason ?? null },
    published: new Date(s.at).toISOString(),
    securityContext: {
      asNumber: s.network.asNumber,
      asOrg: s.network.asOrg,
      isp: s.network.isp,
      domain: s.network.domain,
      isProxy: false,
    },
    severity: s.result === 'FAILURE' ? 'WARN' : 'INFO',
    debugContext: { debugData: { requestId, requestUri: '/api/v1/authn', url: '/api/v1/authn?' } },
    legacyEventType: null,
    transaction: { type: 'WEB', id: requestId, detail: {} },
    uuid: `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`,
    version: '0',
    request: { ipChain: [{ ip: s.ip, geographicalContext: geo, version: 'V4', source: null }] },
    target: (s.targets ?? []).map((t) => ({ ...t, detailEntry: null })),
  };
}

/**
 * A LogEvent of something `who` did: from their usual place, network, address, agent and session, unless `s` says
 * otherwise.
 */
export function eventBy(who: User, s: Partial<EventSpec> & { at: number; type: string }): Record<string, unknown> {
  return logEvent({
    actor: actorOf(who),
    place: who.place,
    network: who.network,
    ip: who.ip,
    agent: who.agent,
    session: who.session,
    ...s,
  });
}

export function actorOf(u: User): EventSpec['actor'] {
  return { id: u.id, type: 'User', alternateId: u.login, displayName: u.name };
}

export function userTarget(u: User): NonNullable<EventSpec['targets']>[number] {
  return { id: u.id, type: 'User', alternateId: u.login, displayName: u.name };
}

const SYSTEM = {
  id: '0oa1system0000000000',
  type: 'PublicClientApp',
  alternateId: 'system',
  displayName: 'Okta System',
};

function background(kind: Kind, u: User, at: number, r: () => number): EventSpec {
  const base = {
    at,
    actor: actorOf(u),
    place: u.place,
    network: u.network,
    ip: u.ip,
    agent: u.agent,
    session: u.session,
  };
  const app = APPS[Math.floor(r() * APPS.length)]!;
  const appTarget = { id: app.id, type: 'AppInstance', alternateId: app.name, displayName: app.name };
  switch (kind) {
    case 'session_start':
      return { ...base, type: 'user.session.start', message: 'User login to Okta', targets: [] };
    case 'sso':
      return { ...base, type: 'user.authentication.sso', message: 'User single sign on to app', targets: [appTarget] };
    case 'token_grant':
      return {
        ...base,
        type: 'app.oauth2.token.grant.access_token',
        message: 'OAuth2 access token is granted',
        targets: [{ id: 'aus1default', type: 'AuthorizationServer', alternateId: 'default', displayName: 'default' }],
      };
    case 'policy_evaluate':
      return {
        ...base,
        type: 'policy.evaluate_sign_on',
        result: 'ALLOW',
        message: 'Evaluation of sign-on policy',
        targets: [
          { id: '00p1default', type: 'PolicyEntity', alternateId: 'Default Policy', displayName: 'Default Policy' },
        ],
      };
    case 'mfa_ok':
      return {
        ...base,
        type: 'user.authentication.auth_via_mfa',
        message: 'Authentication of user via MFA',
        targets: [],
      };
    case 'push_sent':
      return {
        ...base,
        type: 'system.push.send_factor_verify_push',
        message: 'A push was sent to verify a factor',
        targets: [userTarget(u)],
      };
    case 'session_end':
      return { ...base, type: 'user.session.end', message: 'User logout from Okta' };
    case 'signin_failure':
      return u.neverFails
        ? { ...base, type: 'user.session.start', message: 'User login to Okta' }
        : {
            ...base,
            type: 'user.session.start',
            result: 'FAILURE',
            reason: 'INVALID_CREDENTIALS',
            message: 'User login to Okta',
          };
    case 'rate_limit_warning':
      return {
        ...base,
        actor: SYSTEM,
        type: 'system.org.rate_limit.warning',
        result: 'SUCCESS',
        message: 'Rate limit warning',
      };
    case 'group_membership':
      return {
        ...base,
        type: 'group.user_membership.add',
        message: 'Add user to group membership',
        targets: [
          userTarget(u),
          { id: '00g1everyone', type: 'UserGroup', alternateId: 'Everyone', displayName: 'Everyone' },
        ],
      };
    case 'app_update':
      return { ...base, type: 'application.lifecycle.update', message: 'Update application', targets: [appTarget] };
    case 'show_password':
      return {
        ...base,
        type: 'application.user_membership.show_password',
        message: 'Show user password',
        targets: [appTarget, userTarget(u)],
      };
  }
}

const CUMULATIVE = (() => {
  const total = MIX.reduce((s, [, w]) => s + w, 0);
  let acc = 0;
  return MIX.map(([k, w]) => [k, (acc += w) / total] as const);
})();

function pick(r: () => number): Kind {
  const x = r();
  for (const [k, c] of CUMULATIVE) if (x < c) return k;
  return CUMULATIVE[CUMULATIVE.length - 1]![0];
}

export interface Generated {
  readonly org: string;
  readonly event: Record<string, unknown>;
}

/** Time ranges in which an org gets no background events (the planted volume gap). */
export type Silence = ReadonlyArray<{ org: string; from: number; to: number }>;

/** Users of one org the background leaves alone: indices [from, to). */
export interface Reserved {
  readonly org: string;
  readonly from: number;
  readonly to: number;
}

/** The background, in chunks of `chunk` events (orgs interleaved, times random within the range). */
export function* backgroundEvents(
  opts: GenOptions,
  silence: Silence = [],
  reserved?: Reserved,
  chunk = 10_000,
): Generator<Generated[]> {
  const r = seededRandom(opts.seed ?? 1);
  const start = opts.start.getTime();
  const span = opts.days * 86_400_000;
  const total = opts.orgs * opts.usersPerOrg * opts.days * opts.eventsPerUserPerDay;
  const users = new Map<string, User>();
  let out: Generated[] = [];
  for (let n = 0; n < total; n++) {
    const o = Math.floor(r() * opts.orgs);
    const i = Math.floor(r() * opts.usersPerOrg);
    const at = start + Math.floor(r() * span);
    const org = orgName(o);
    if (silence.some((s) => s.org === org && at >= s.from && at < s.to)) continue;
    if (reserved && reserved.org === org && i >= reserved.from && i < reserved.to) continue;
    const key = `${o}/${i}`;
    let u = users.get(key);
    if (!u) users.set(key, (u = user(o, i)));
    out.push({ org, event: logEvent(background(pick(r), u, at, r)) });
    if (out.length >= chunk) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}
