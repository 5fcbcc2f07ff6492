/**
 * The simulated identity-service org: tests run it in-process; `hooklog
 * demo` can start it to have something to poll. See server.ts.
 */
export { SimulatedOrg, type RequestRecord } from './server.js';
export { type StoredEvent } from './store.js';
export { HookSender } from './hook-sender.js';
export { history, logEvent, legacyEvent } from './generate.js';
export type { SimApi } from './api.js';
export { SecurityEventsApi } from './security-events.js';
export { UsersApi } from './users.js';
export { OidcSignIn, type SimUser } from './oidc.js';
export { SsfTransmitter } from './ssf-transmitter.js';
export { type SsfStream } from './ssf-streams.js';
export { HookManagementApi } from './hooks-api.js';
export { Directory } from './directory.js';
export { DirectoryApi } from './directory-api.js';
