/**
 * hooklog as a Shared Signals transmitter, seen from the org: the documents an
 * org reads when it registers hooklog as a security events provider (issuer +
 * well-known URL), and again whenever it meets a `kid` it does not know.
 *
 * - `GET /.well-known/ssf-configuration`: the transmitter configuration
 *   metadata (OpenID SSF 1.0): issuer, jwks_uri, push delivery (RFC 8935).
 * - `GET /.well-known/jwks.json` (the default `jwks_uri`): the public keys
 *   SETs are signed with, during a rotation the old ones too.
 *
 * Only public data, no authentication; the keys are loaded once at start by
 * whoever composes the app (consumers/response/signer.ts) and passed in as data.
 */
import type Router from '@koa/router';

export interface SsfProvider {
  readonly issuer: string;
  readonly jwksUri: string;
  readonly jwks: { readonly keys: readonly object[] };
}

/** RFC 8935 push: the delivery method hooklog uses (it pushes; it never serves a poll endpoint). */
const PUSH = 'urn:ietf:rfc:8935';

export const SSF_CONFIGURATION_PATH = '/.well-known/ssf-configuration';
export const JWKS_PATH = '/.well-known/jwks.json';

/** The transmitter configuration metadata document. */
export function ssfConfiguration(p: SsfProvider): Record<string, unknown> {
  return {
    spec_version: '1_0',
    issuer: p.issuer,
    jwks_uri: p.jwksUri,
    delivery_methods_supported: [PUSH],
  };
}

export function mountSsfWellKnown(router: Router, p: SsfProvider): void {
  const doc = JSON.stringify(ssfConfiguration(p));
  const jwks = JSON.stringify(p.jwks);
  router.get(SSF_CONFIGURATION_PATH, (ctx) => {
    ctx.type = 'application/json';
    ctx.set('cache-control', 'public, max-age=300');
    ctx.body = doc;
  });
  // Served here whatever jwks_uri says, so the default works; a configured jwks_uri elsewhere serves its own copy.
  router.get(JWKS_PATH, (ctx) => {
    ctx.type = 'application/json';
    ctx.set('cache-control', 'public, max-age=300');
    ctx.body = jwks;
  });
}
