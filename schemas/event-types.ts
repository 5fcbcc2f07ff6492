/**
 * Groups of the identity service's event types that several readers name
 * (the query library, the console): one list each, so they cannot drift.
 */

/** Sign-in events whose outcome says whether a sign-in attempt failed. */
export const SIGN_IN_EVENT_TYPES = [
  'user.session.start',
  'user.authentication.sso',
  'user.authentication.auth_via_mfa',
  'user.authentication.verify',
  'user.authentication.auth_via_richclient',
] as const;

/** Outcomes of a failed attempt. */
export const FAILED_OUTCOMES = ['FAILURE', 'DENY'] as const;

/** A SQL tuple literal of constant strings (for the lists above: never for values from outside). */
export function sqlList(values: readonly string[]): string {
  return `(${values.map((v) => `'${v.replace(/[\\']/g, '\\$&')}'`).join(', ')})`;
}
