/**
 * The simulated identity-service org: tests run it in-process; `hooklog
 * demo` can start it to have something to poll. See server.ts.
 */
export { SimulatedOrg, type SimulatedOrgOptions, type RequestRecord } from './server.js';
export { FaultPlan, type Fault } from './faults.js';
export { seededRandom } from '../support/random.js';
export { Bucket, type BucketOptions } from './rate-limit.js';
export { AuthServer, type AuthOptions, type SimulatedClient } from './auth.js';
export { EventLog, type StoredEvent, type NewEvent } from './store.js';
export { HookSender, type DeliveryEnvelope, type HookSenderOptions } from './hook-sender.js';
export { history, logEvent, legacyEvent, logEventTemplates, legacyEventTemplates, type HistoryOptions } from './generate.js';
