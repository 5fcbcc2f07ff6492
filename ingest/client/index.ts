export { IdentityClient, resolveNext, type Page, type ClientEvents, type IdentityClientOptions, type GetOptions } from './client.js';
export { SswsAuthenticator, type Authenticator } from './auth.js';
export { OAuthAuthenticator, renewMarginMs, type OAuthOptions } from './oauth.js';
export { DpopProver, dpopHtu, accessTokenHash } from './dpop.js';
export { loadSigningKey, ASSERTION_ALGS, type AssertionAlg, type SigningKey } from './keys.js';
export { parseLinkHeader, findLink, type Link } from './link.js';
export { RateBudget, readRateLimit, rateLimitedDelay, type RateLimitState, type RateBudgetOptions } from './rate-limit.js';
export { IdpRetryPolicies, withPolicies, type IdpPolicies } from './policies.js';
export { classifyIdpReply, classifyNetworkError } from './errors.js';
