/**
 * The Shared Signals push contract both ends of hooklog speak: the receiver (receivers/ssf) answers with these
 * codes, the transmitter (consumers/response) reads them from the org's answers. RFC 8935 §2.3, a closed list.
 */
export const SET_ERRORS = [
  'invalid_request',
  'invalid_key',
  'invalid_issuer',
  'invalid_audience',
  'authentication_failed',
  'access_denied',
] as const;
export type SetError = (typeof SET_ERRORS)[number];
