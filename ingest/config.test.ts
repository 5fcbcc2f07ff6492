import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../cli/config/load.js';
import { redactSecrets } from '../platform/config/secrets.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const jwk = JSON.stringify({ ...rsa.privateKey.export({ format: 'jwk' }), kid: 'jwk-kid' });
const org = (extra: Record<string, unknown> = {}) => ({
  id: 'acme',
  base_url: 'https://acme.okta.com',
  auth: { ssws: { token: 'tok-secret-123' } },
  ...extra,
});

describe('orgs config', () => {
  it('fills documented defaults: System Log on from 7 days back, legacy off', () => {
    const c = parseConfig({ orgs: [org()] }, {});
    expect(c.orgs[0]).toMatchObject({
      id: 'acme',
      request_timeout_ms: 60_000,
      system_log: {
        enabled: true,
        start: '7d',
        poll_interval_ms: 15_000,
        rate_limit_share: 0.4,
        silent_after_ms: 3_600_000,
      },
      legacy_events: { enabled: false },
    });
    expect(parseConfig({}, {}).orgs).toEqual([]);
  });

  it('identity_sync: off by default, validated, the full pass no more often than the incremental one', () => {
    expect(parseConfig({ orgs: [org()] }, {}).orgs[0]!.identity_sync).toEqual({
      enabled: false,
      interval_ms: 300_000,
      full_interval_ms: 21_600_000,
      rate_limit_share: 0.2,
    });
    const on = parseConfig({ orgs: [org({ identity_sync: { enabled: true, interval_ms: 60_000 } })] }, {});
    expect(on.orgs[0]!.identity_sync).toMatchObject({ enabled: true, interval_ms: 60_000 });
    expect(() =>
      parseConfig({ orgs: [org({ identity_sync: { interval_ms: 600_000, full_interval_ms: 60_000 } })] }, {}),
    ).toThrow(/identity_sync\.full_interval_ms.*at least identity_sync\.interval_ms/);
    expect(() => parseConfig({ orgs: [org({ identity_sync: { rate_limit_share: 0 } })] }, {})).toThrow(
      /identity_sync\.rate_limit_share/,
    );
    expect(() => parseConfig({ orgs: [org({ identity_sync: { interval: 5 } })] }, {})).toThrow(/unknown key.*interval/);
  });

  it('rejects unknown keys, duplicate ids, a base URL with a path, bad starts and shares', () => {
    expect(() => parseConfig({ orgs: [org({ sytem_log: {} })] }, {})).toThrow(/orgs\.0.*unknown key.*sytem_log/);
    expect(() => parseConfig({ orgs: [org(), org()] }, {})).toThrow(/duplicate org id "acme"/);
    expect(() => parseConfig({ orgs: [org({ base_url: 'https://acme.okta.com/api/v1' })] }, {})).toThrow(
      /orgs\.0\.base_url/,
    );
    expect(() => parseConfig({ orgs: [org({ system_log: { start: '2026-01-01T00:00:00' } })] }, {})).toThrow(
      /orgs\.0\.system_log\.start/,
    );
    expect(() => parseConfig({ orgs: [org({ system_log: { rate_limit_share: 0 } })] }, {})).toThrow(/rate_limit_share/);
    expect(() => parseConfig({ orgs: [org({ legacy_events: { filter: 'published gt "x"' } })] }, {})).toThrow(
      /legacy_events\.filter.*published/,
    );
  });

  it('wants exactly one auth method, and for OAuth exactly one key source', () => {
    expect(() => parseConfig({ orgs: [org({ auth: {} })] }, {})).toThrow(/exactly one of auth\.ssws and auth\.oauth/);
    expect(() =>
      parseConfig(
        { orgs: [org({ auth: { ssws: { token: 't' }, oauth: { client_id: 'c', private_key: pem, key_id: 'k' } } })] },
        {},
      ),
    ).toThrow(/exactly one/);
    expect(() => parseConfig({ orgs: [org({ auth: { oauth: { client_id: 'c', key_id: 'k' } } })] }, {})).toThrow(
      /exactly one of private_key and private_key_path/,
    );
  });

  it('validates the private key at boot, naming the key and the problem', () => {
    const ok = parseConfig(
      { orgs: [org({ auth: { oauth: { client_id: 'c', private_key: pem, key_id: 'k1', dpop: true } } })] },
      {},
    );
    expect(ok.orgs[0]!.auth.oauth).toMatchObject({ client_id: 'c', key_id: 'k1', dpop: true });
    expect(
      parseConfig({ orgs: [org({ auth: { oauth: { client_id: 'c', private_key: jwk } } })] }, {}).orgs,
    ).toHaveLength(1);
    expect(() =>
      parseConfig({ orgs: [org({ auth: { oauth: { client_id: 'c', private_key: 'not a key', key_id: 'k' } } })] }, {}),
    ).toThrow(/orgs\.0\.auth\.oauth\.private_key": not a usable private key \(PEM or JWK\)/);
    expect(() => parseConfig({ orgs: [org({ auth: { oauth: { client_id: 'c', private_key: pem } } })] }, {})).toThrow(
      /key_id is required/,
    );
    const pub = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(() =>
      parseConfig({ orgs: [org({ auth: { oauth: { client_id: 'c', private_key: pub, key_id: 'k' } } })] }, {}),
    ).toThrow(/not a usable private key/);
    expect(() =>
      parseConfig(
        { orgs: [org({ auth: { oauth: { client_id: 'c', private_key: pem, key_id: 'k', algorithm: 'ES256' } } })] },
        {},
      ),
    ).toThrow(/does not fit/);
  });

  it('never prints the token or the private key', () => {
    const c = parseConfig(
      { orgs: [org(), org({ id: 'b', auth: { oauth: { client_id: 'c', private_key: pem, key_id: 'k' } } })] },
      {},
    );
    const printed = JSON.stringify(redactSecrets(c));
    expect(printed).not.toContain('tok-secret-123');
    expect(printed).not.toContain('PRIVATE KEY');
    expect(printed).toContain('acme.okta.com');
  });
});
