import { describe, expect, it } from 'vitest';
import { createAuthenticator, type AuthResult } from './auth.js';

const SECRET = 'token-hook-secret-0123456789';
const noEvents = { fetched: () => undefined, fetchFailed: () => undefined, throttled: () => undefined };
const secretAuth = () =>
  createAuthenticator(
    { type: 'header', header: 'authorization', secrets: [SECRET, 'second-secret-0123456789'] },
    noEvents,
  );
const headers =
  (h: Record<string, string>) =>
  (name: string): string =>
    h[name.toLowerCase()] ?? '';

describe('header-secret authentication', () => {
  it('answers on the spot, without a promise: no microtask turn on every sign-in', () => {
    const auth = secretAuth();
    const right = auth.check(headers({ authorization: SECRET }));
    const wrong = auth.check(headers({ authorization: `${SECRET}x` }));
    expect(right).not.toBeInstanceOf(Promise);
    expect(wrong).not.toBeInstanceOf(Promise);
    expect(right).toEqual({ ok: true });
    expect(wrong).toEqual({ ok: false, reason: 'secret' });
  });

  it('accepts each configured secret and refuses anything else with reason "secret"', () => {
    const auth = secretAuth();
    const check = (h: Record<string, string>) => auth.check(headers(h)) as AuthResult;
    expect(check({ authorization: SECRET })).toEqual({ ok: true });
    expect(check({ authorization: 'second-secret-0123456789' })).toEqual({ ok: true });
    const refusals: Array<Record<string, string>> = [
      {},
      { authorization: '' },
      { authorization: SECRET.slice(0, -1) },
      { other: SECRET },
    ];
    for (const refused of refusals)
      expect([refused, check(refused)]).toEqual([refused, { ok: false, reason: 'secret' }]);
  });
});
