/**
 * An org's authenticator from its config entry: `SSWS`, or an OAuth service
 * app asking for exactly the scopes its user needs (the service refuses a token
 * request naming a scope the app was not granted, so each user of the APIs —
 * the pollers, hook registration, response actions — asks for its own).
 */
import { readFileSync } from 'node:fs';
import { HooklogError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { SswsAuthenticator, type Authenticator } from './auth.js';
import type { OrgIdentity } from './config.js';
import { DpopProver } from './dpop.js';
import { loadSigningKey, type SigningKey } from './keys.js';
import { OAuthAuthenticator } from './oauth.js';

/**
 * The OAuth signing key of an org (read from `private_key_path` when given),
 * or CONFIG_INVALID naming the key. What start loads, and `check-config`
 * checks (`checkOrgKeys`).
 */
function orgSigningKey(org: OrgIdentity, o: NonNullable<OrgIdentity['auth']['oauth']>): SigningKey {
  const where = `orgs[${org.id}].auth.oauth.${o.private_key !== undefined ? 'private_key' : 'private_key_path'}`;
  let text: string;
  try {
    text = o.private_key ?? readFileSync(o.private_key_path!, 'utf8');
  } catch (err) {
    throw new HooklogError('CONFIG_INVALID', `${where}: cannot read ${o.private_key_path}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  return loadSigningKey(text, { kid: o.key_id, alg: o.algorithm }, where);
}

/** Loads every org's OAuth key as start would, starting nothing; throws CONFIG_INVALID for the first bad one. */
export function checkOrgKeys(orgs: readonly OrgIdentity[]): void {
  for (const org of orgs) if (org.auth.oauth) orgSigningKey(org, org.auth.oauth);
}

export async function createAuthenticator(
  org: OrgIdentity,
  scopes: readonly string[],
  logger: Logger,
): Promise<Authenticator> {
  if (org.auth.ssws) return new SswsAuthenticator(org.auth.ssws.token);
  const o = org.auth.oauth!;
  const log = logger.child({ component: 'oauth', org: org.id });
  const key = orgSigningKey(org, o);
  return new OAuthAuthenticator({
    org: org.id,
    tokenUrl: o.token_url ?? `${org.base_url.replace(/\/+$/, '')}/oauth2/v1/token`,
    clientId: o.client_id,
    key,
    scopes,
    dpop: o.dpop ? await DpopProver.create() : null,
    timeoutMs: org.request_timeout_ms,
    onToken: (t) => log.info({ renewal: t.renewal, expires_in_s: t.expiresInS, type: t.type }, 'oauth_token_obtained'),
  });
}
