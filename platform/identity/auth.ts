/**
 * How requests to the identity service prove who they are: an `SSWS` API
 * token, or an OAuth 2.0 access token from a service app (oauth.ts), bound to
 * a DPoP key when configured.
 */
import type { HeaderSource } from './rate-limit.js';

export interface Authenticator {
  readonly kind: 'ssws' | 'oauth';
  /** Headers proving the request `method url`; may fetch a token (and throw its classified error). */
  headers(method: string, url: string, signal?: AbortSignal): Promise<Record<string, string>>;
  /** Every reply passes here, `ok` when it was 2xx (DPoP servers send fresh nonces on any reply). */
  observe(headers: HeaderSource, ok: boolean): void;
  /**
   * The reply was 401. Returns true when one more attempt with fresh
   * credentials can succeed (a token revoked or expired early, a DPoP nonce
   * asked for); false when the credentials themselves are refused.
   */
  unauthorized(headers: HeaderSource, bodyText: string): boolean;
}

/** `Authorization: SSWS <token>`: nothing to renew, a 401 is final. */
export class SswsAuthenticator implements Authenticator {
  readonly kind = 'ssws' as const;
  readonly #header: string;

  constructor(token: string) {
    this.#header = `SSWS ${token}`;
  }

  async headers(): Promise<Record<string, string>> {
    return { authorization: this.#header };
  }

  observe(): void {}

  unauthorized(): boolean {
    return false;
  }
}
