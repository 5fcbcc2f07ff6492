/**
 * The console's audit of refusals: every console or console API request
 * refused for who is asking (another org's anything, a viewer's change, a
 * change without its CSRF token or from another origin, a revoked session, a
 * grant the identity service no longer gives, an API key that is not one) is logged once as
 * `console_refused`, with the principal, the route and the reason, and counted
 * by reason (platform/refusals.ts does both, for the query API too).
 */
import { refusalAudit } from '../platform/refusals.js';

export const REFUSAL_REASONS = [
  'other_org',
  'viewer_change',
  'csrf',
  'revoked_session',
  'grant_removed',
  'wrong_key',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** Logs and counts one refusal; `org` is the org asked for, when the refusal is about one. */
export const recordRefusal = refusalAudit<RefusalReason>({
  metric: 'hooklog_console_refusals_total',
  help: 'Console and console API requests refused for who asked, by reason: other_org (answered 404), viewer_change, csrf (token or origin), revoked_session, grant_removed, wrong_key (an API key that is none of the configured ones).',
  reasons: REFUSAL_REASONS,
  event: 'console_refused',
});
