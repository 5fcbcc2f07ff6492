/**
 * Test plumbing for the response component: configs built by the production
 * parser, a signing key, and risk changes as alerting's risk state writes them
 * (schemas/risk.ts), so tests drive the component through its real input.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { JWKS_PATH, mountSsfWellKnown } from '../../receivers/ssf/well-known.js';
import type { SetSigner } from './signer.js';
import { parseConfig } from '../../cli/config/load.js';
import type { Config } from '../../cli/config/schema.js';
import { riskRank, type RiskChange, type RiskLevel } from '../../schemas/risk.js';

/** An RSA key for SETs (PKCS#8 PEM), made once per test process. */
export const TEST_SET_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

export interface TestOrg {
  readonly id: string;
  readonly url: string;
  readonly token?: string;
}

/**
 * A whole config with `orgs:` (polling off) and `response:` as given, parsed by the real schema. `response`
 * defaults to a transmitter with `TEST_SET_KEY` and every org responding with SETs only.
 */
export function responseConfig(
  orgs: readonly TestOrg[],
  response: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Config {
  return parseConfig(
    {
      ...extra,
      orgs: orgs.map((o) => ({
        id: o.id,
        base_url: o.url,
        auth: { ssws: { token: o.token ?? 'sim-token' } },
        request_timeout_ms: 5_000,
        system_log: { enabled: false },
      })),
      response: {
        transmitter: { issuer: 'https://hooklog.example.test', private_key: TEST_SET_KEY },
        orgs: orgs.map((o) => ({ org: o.id })),
        ...response,
      },
    },
    {},
  );
}

let seq = 0;

/** A risk change of `user` in `org`; ids derive from the arguments (and a sequence), as the risk state's would. */
export function riskChange(
  org: string,
  user: { id: string; login?: string },
  previous: RiskLevel,
  current: RiskLevel,
  over: Partial<RiskChange> = {},
): RiskChange {
  const n = ++seq;
  const alert = over.alert_id ?? createHash('sha256').update(`alert ${org} ${user.id} ${n}`).digest('hex').slice(0, 32);
  return {
    change_id: createHash('sha256').update(`change ${org} ${user.id} ${previous} ${current} ${alert}`).digest('hex'),
    org,
    entity: { type: 'user', id: user.id, ...(user.login ? { login: user.login } : {}) },
    previous,
    current,
    cause: riskRank(current) > riskRank(previous) ? 'finding' : 'expiry',
    rule_id: 'impossible-travel',
    alert_id: alert,
    reason: 'Sign-ins from two countries 9,000 km apart within 30 minutes',
    at: new Date().toISOString(),
    ...over,
  };
}

/**
 * hooklog's well-known documents on a port of their own, for tests that run the component without the HTTP app:
 * listen first (the issuer is the URL), then `serve` the loaded signer's keys.
 */
export async function startProvider(): Promise<{
  readonly url: string;
  serve(signer: SetSigner): void;
  close(): Promise<void>;
}> {
  let handler: ReturnType<Koa['callback']> | null = null;
  const server = createServer((req, res) => (handler ? void handler(req, res) : res.writeHead(503).end()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    serve(signer) {
      const app = new Koa();
      const router = new Router();
      mountSsfWellKnown(router, { issuer: signer.issuer, jwksUri: `${signer.issuer}${JWKS_PATH}`, jwks: signer.jwks });
      app.use(router.routes());
      handler = app.callback();
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
