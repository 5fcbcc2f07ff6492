/**
 * The token inline hook's protocol limits, as data (protocols.md §2). One
 * module so the load-time checks (config.ts) and the per-answer checks
 * (answer.ts) read the same lists and cannot drift apart.
 */

/** The only `eventType` a token inline hook request carries. */
export const TOKEN_HOOK_EVENT_TYPE = 'com.okta.oauth2.tokens.transform';

/** The two command types; nothing else is understood by the service. */
export const COMMAND = {
  id: 'com.okta.identity.patch',
  access: 'com.okta.access.patch',
} as const;

export type TokenType = keyof typeof COMMAND;

/** Token lifetime bounds in seconds (`/token/lifetime/expiration`). */
export const LIFETIME_MIN_S = 300;
export const LIFETIME_MAX_S = 86_400;

/** The answer must stay under 256 KB or the service ignores it. */
export const MAX_ANSWER_BYTES = 256 * 1024;

/** The path of the lifetime member; the only non-claim path a patch may touch. */
export const LIFETIME_PATH = '/token/lifetime/expiration';

/** Prefix of every claim path in a patch. */
export const CLAIMS_PREFIX = '/claims/';

/**
 * Claims the service never lets a hook add, change or remove. Touching one
 * makes the service drop the *whole* patch silently and issue the original
 * token, so hooklog refuses them at config load and again per answer.
 */
export const RESERVED_CLAIMS = {
  both: ['acr', 'auth_time', 'cid', 'cnf', 'exp', 'groups', 'iat', 'iss', 'jti', 'sid', 'token_type', 'ver'],
  idOnly: [
    'active',
    'aid',
    'amr',
    'app_id',
    'app_type',
    'at_hash',
    'aud',
    'c_hash',
    'client_id',
    'client_ip',
    'client_req_id',
    'client_type',
    'client_user_agent',
    'device_compliance',
    'device_id',
    'device_known',
    'device_managed',
    'device_name',
    'device_trust',
    'did',
    'dst',
    'group',
    'hotk',
    'idp',
    'idp_iss',
    'mac_key',
    'may_act',
    'nonce',
    'oid',
    'okta_emailVerified',
    'okta_lastUpdated',
    'orig',
    'permissions',
    'purpose',
    'pwd_exp_days',
    'pwd_exp_time',
    'rid',
    'role',
    'scope',
    'scopes',
    'sub',
    'term',
    'user_ip',
  ],
  // `aud` and `sub` are deliberately absent: they may be changed in access tokens.
  accessOnly: ['as_uri', 'authorization_details', 'rpt', 'rsi', 'scp', 'uid', 'username'],
} as const;

const RESERVED: Readonly<Record<TokenType, ReadonlySet<string>>> = {
  id: new Set<string>([...RESERVED_CLAIMS.both, ...RESERVED_CLAIMS.idOnly]),
  access: new Set<string>([...RESERVED_CLAIMS.both, ...RESERVED_CLAIMS.accessOnly]),
};

/** True when the service reserves the top-level claim `name` in tokens of type `token`. */
export function isReservedClaim(token: TokenType, name: string): boolean {
  return RESERVED[token].has(name);
}

/** True when `seconds` is a lifetime the service accepts. */
export function isValidLifetime(seconds: unknown): seconds is number {
  return (
    typeof seconds === 'number' && Number.isInteger(seconds) && seconds >= LIFETIME_MIN_S && seconds <= LIFETIME_MAX_S
  );
}
