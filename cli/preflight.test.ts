/**
 * `check-config` refuses what `start` would refuse: each file start reads
 * (token-hook lookup tables, an org's private key file, the TLS pair, rule
 * files) and each key it loads, named in the error. Once check-config took a
 * missing or malformed lookup file that start then refused.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from './config/load.js';
import { preflight } from './preflight.js';
import { runCli } from '../test/support/cli.js';
import { writeMmdb } from '../test/support/mmdb.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-preflight-'));
const SECRET = 'token-hook-secret-0123456789';

/** A token hook whose rule reads column `department` of lookup table `employees` at `file`. */
function tokenHook(file: string) {
  return {
    id: 'tokens',
    org: 'acme',
    auth: { type: 'header', secrets: [SECRET] },
    lookups: [{ name: 'employees', file, format: 'csv', key: 'login' }],
    rules: [
      {
        name: 'dept',
        actions: [
          {
            add: {
              tokens: 'access',
              claim: 'department',
              lookup: { table: 'employees', key: '{{user.login}}', column: 'department' },
            },
          },
        ],
      },
    ],
  };
}

async function problem(raw: Record<string, unknown>): Promise<string> {
  try {
    await preflight(parseConfig(raw, {}));
  } catch (err) {
    expect((err as { code?: string }).code).toBe('CONFIG_INVALID');
    return (err as Error).message;
  }
  return '';
}

describe('preflight: what start would refuse', () => {
  const good = join(dir, 'employees.csv');
  writeFileSync(good, 'login,department\nbob@example.com,R&D\n');

  it('passes a config whose files and keys all load', async () => {
    const key = join(dir, 'app.pem');
    writeFileSync(
      key,
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
    );
    expect(
      await problem({
        token_hooks: [tokenHook(good)],
        orgs: [
          {
            id: 'o',
            base_url: 'https://o.okta.com',
            auth: { oauth: { client_id: 'c', key_id: 'k', private_key_path: key } },
          },
        ],
        alerting: {},
      }),
    ).toBe('');
  });

  it('refuses a token hook lookup file that is missing, or lacks a column a rule reads', async () => {
    expect(await problem({ token_hooks: [tokenHook(join(dir, 'nope.csv'))] })).toMatch(
      /token_hooks: token hook "tokens": lookup "employees" \(.*nope\.csv\): .*ENOENT/,
    );
    const noColumn = join(dir, 'no-column.csv');
    writeFileSync(noColumn, 'login,team\nbob@example.com,R&D\n');
    expect(await problem({ token_hooks: [tokenHook(noColumn)] })).toContain(
      'column "department" used by a rule is not in the header',
    );
  });

  it('refuses an unreadable private key file, a TLS pair that is not one, a rule file that does not load, a SET key that is none', async () => {
    const notKey = join(dir, 'not-a-key.pem');
    writeFileSync(notKey, 'hello');
    const message = await problem({
      orgs: [
        {
          id: 'o1',
          base_url: 'https://o1.okta.com',
          auth: { oauth: { client_id: 'c', key_id: 'k', private_key_path: join(dir, 'gone.pem') } },
        },
        {
          id: 'o2',
          base_url: 'https://o2.okta.com',
          auth: { oauth: { client_id: 'c', key_id: 'k', private_key_path: notKey } },
        },
      ],
      server: { tls: { cert_path: notKey, key_path: notKey } },
      alerting: { rule_files: [join(dir, 'missing-rules.yaml')] },
      response: { transmitter: { issuer: 'https://h.test', private_key_path: notKey } },
    });
    expect(message).toMatch(/^server\.tls: .*not-a-key\.pem .* are not a certificate and its key/m);
    expect(message).toMatch(/^orgs\[o1\]\.auth\.oauth\.private_key_path: cannot read .*gone\.pem/m);
    expect(message).toMatch(/^alerting: .*missing-rules\.yaml/m);
    expect(message).toMatch(/^response\.transmitter\.private_key: not a usable private key/m);
  });

  it('hooklog check-config exits 1 naming the lookup file; start fails the same way before opening anything', async () => {
    const configPath = join(dir, 'hooklog.yaml');
    writeFileSync(
      configPath,
      stringify({ data_dir: join(dir, 'data'), server: { port: 0 }, token_hooks: [tokenHook(join(dir, 'nope.csv'))] }),
    );
    const check = await runCli(['--config', configPath, 'check-config']);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/CONFIG_INVALID: token_hooks: .*lookup "employees" .*nope\.csv/);
    const start = await runCli(['--config', configPath, 'start']);
    expect(start.code).toBe(1);
    expect(start.stderr).toMatch(/CONFIG_INVALID: token_hooks: .*lookup "employees" .*nope\.csv/);
  });

  it("checks only what the roles load: a receivers-only instance does not read the pollers' keys or the rule files", async () => {
    const config = parseConfig(
      {
        orgs: [
          {
            id: 'o1',
            base_url: 'https://o1.okta.com',
            auth: { oauth: { client_id: 'c', key_id: 'k', private_key_path: join(dir, 'gone.pem') } },
          },
        ],
        alerting: { rule_files: [join(dir, 'missing-rules.yaml')] },
      },
      {},
    );
    await expect(preflight(config, ['receivers'])).resolves.toBeUndefined();
    await expect(preflight(config, ['pollers'])).rejects.toThrow(/gone\.pem/);
    await expect(preflight(config, ['alerting'])).rejects.toThrow(/missing-rules\.yaml/);
  });

  it('refuses GeoIP files that do not load: missing, no MMDB, the wrong kind of database', async () => {
    const city = join(dir, 'City.mmdb');
    const asn = join(dir, 'ASN.mmdb');
    writeFileSync(city, writeMmdb('GeoLite2-City', []));
    writeFileSync(asn, writeMmdb('GeoLite2-ASN', []));
    const geo = (g: Record<string, string>) => problem({ enrichment: { geoip: g } });
    expect(await geo({ city, asn })).toBe('');
    expect(await geo({ city: join(dir, 'gone.mmdb') })).toMatch(/^enrichment\.geoip\.city: cannot read .*gone\.mmdb/);
    expect(await geo({ asn: good })).toMatch(/^enrichment\.geoip\.asn: .*employees\.csv is not a MaxMind DB/);
    expect(await geo({ city: asn })).toMatch(/^enrichment\.geoip\.city: .* is a "GeoLite2-ASN" database/);
  });
});
