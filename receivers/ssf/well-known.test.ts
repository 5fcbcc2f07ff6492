/**
 * hooklog's well-known documents as an org reads them when it registers
 * hooklog as a security events provider: the SSF transmitter metadata naming
 * the issuer and jwks_uri, and a JWKS with the public keys only, served by the
 * app the process builds (cli/app.ts) from the configured signing key.
 */
import { createLocalJWKSet, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../cli/app.js';
import { prepareResponse } from '../../cli/response.js';
import { setClaims } from '../../consumers/response/set.js';
import { responseConfig, riskChange, TEST_SET_KEY } from '../../consumers/response/testing.js';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import { freshDir } from '../token-hook/testing.js';

describe('the SSF well-known documents', () => {
  it('name the issuer and the JWKS, whose keys verify the SETs hooklog signs', async () => {
    const config = responseConfig([{ id: 'acme', url: 'https://acme.example.test' }], {
      transmitter: { issuer: 'https://hooklog.example.test', private_key: TEST_SET_KEY },
    });
    const stream = await openEmbeddedStream({ dataDir: freshDir('ssf-wk') });
    try {
      const prepared = await prepareResponse(config, stream);
      const app = createApp({
        config,
        stream,
        topics: topicNames(config.stream.topic_prefix),
        probes: [],
        logger: silentLogger(),
        receivers: false,
        ssfProvider: prepared.provider!,
      });
      const server = app.listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      try {
        const conf = await fetch(`${url}/.well-known/ssf-configuration`);
        expect(conf.status).toBe(200);
        expect(conf.headers.get('content-type')).toMatch(/^application\/json/);
        expect(await conf.json()).toEqual({
          spec_version: '1_0',
          issuer: 'https://hooklog.example.test',
          jwks_uri: 'https://hooklog.example.test/.well-known/jwks.json',
          delivery_methods_supported: ['urn:ietf:rfc:8935'],
        });
        const jwks = (await (await fetch(`${url}/.well-known/jwks.json`)).json()) as {
          keys: Array<Record<string, unknown>>;
        };
        expect(jwks.keys).toHaveLength(1);
        expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', kid: prepared.signer!.kid, use: 'sig', alg: 'RS256' });
        expect(Object.keys(jwks.keys[0]!)).not.toEqual(expect.arrayContaining(['d', 'p', 'q']));
        const settings = config.response!.orgs[0]!.security_events;
        const claims = setClaims(
          riskChange('acme', { id: '00u1', login: 'a@acme.test' }, 'none', 'high'),
          {
            issuer: 'https://hooklog.example.test',
            eventType: config.response!.transmitter!.event_type,
            orgUrl: 'https://acme.example.test',
            settings,
          },
          Date.now(),
        )!;
        const token = await prepared.signer!.sign(claims);
        await expect(
          jwtVerify(token, createLocalJWKSet(jwks as never), {
            typ: 'secevent+jwt',
            issuer: 'https://hooklog.example.test',
          }),
        ).resolves.toBeDefined();
      } finally {
        await new Promise((r) => server.close(r));
      }
    } finally {
      await stream.close();
    }
  });
});
