import { describe, expect, it } from 'vitest';
import { parseConfig } from './load.js';

const ISS = 'https://acme.example.com';
const receiver = (id: string) => ({ id, org: 'acme', issuer: ISS, jwks_uri: `${ISS}/keys`, audience: 'https://h/x' });
const tokenHook = (id: string) => ({
  id,
  org: 'acme',
  auth: { type: 'header', secrets: ['0123456789abcdef'] },
  rules: [],
});
const eventHook = (id: string) => ({ id, org: 'acme', auth: { secrets: ['0123456789abcdef'] } });
const org = (id: string) => ({ id, base_url: 'https://acme.okta.com', auth: { ssws: { token: 'ssws-token-0123' } } });

describe('ids unique within each list (uniqueIds)', () => {
  it.each([
    ['ssf_receivers', { ssf_receivers: [receiver('a'), receiver('b'), receiver('a')] }, 'duplicate receiver id "a"'],
    ['token_hooks', { token_hooks: [tokenHook('t'), tokenHook('t')] }, 'duplicate token hook id "t"'],
    ['orgs', { orgs: [org('x'), org('y'), org('y')] }, 'duplicate org id "y"'],
    // Checked from the config's own refinement (its cross-field checks), at the same path as the others.
    ['event_hooks', { event_hooks: [eventHook('e'), eventHook('e')] }, 'duplicate hook id "e"'],
  ])('%s: the second one is refused, naming the first', (key, raw, says) => {
    const second = key === 'token_hooks' || key === 'event_hooks' ? 1 : 2;
    const first = key === 'orgs' ? 1 : 0;
    expect(() => parseConfig(raw, {})).toThrow(says);
    expect(() => parseConfig(raw, {})).toThrow(`${key}.${second}.id`);
    expect(() => parseConfig(raw, {})).toThrow(`(also ${key}.${first}.id)`);
  });

  it('distinct ids pass', () => {
    const c = parseConfig(
      { ssf_receivers: [receiver('a'), receiver('b')], orgs: [org('x'), org('y')], event_hooks: [eventHook('e')] },
      {},
    );
    expect(c.ssf_receivers.map((r) => r.id)).toEqual(['a', 'b']);
    expect(c.event_hooks.map((h) => h.id)).toEqual(['e']);
    expect(c.orgs.map((o) => o.id)).toEqual(['x', 'y']);
  });
});
