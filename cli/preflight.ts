/**
 * What `start` would refuse beyond the config's own shape: the files it reads
 * and the keys it loads. `hooklog check-config` runs it, so a config it passes
 * does not fail at start; `start` runs the same checks first, so it fails
 * before opening anything, with the same words. Nothing here starts, binds,
 * connects or writes.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Config } from './config/schema.js';
import type { Role } from '../platform/config/fleet.js';
import { HooklogError, errorMessage } from '../platform/errors.js';
import { defaultMigrationsDir, loadMigrations } from '../platform/store/index.js';
import { checkTokenHooks } from '../receivers/token-hook/index.js';
import { checkOrgKeys } from '../platform/identity/authenticator.js';
import { loadConfiguredRules } from '../consumers/alerting/index.js';
import { loadSetSigner } from '../consumers/response/index.js';
import { openIpLists } from './ip-lists.js';
import { GeoIp } from '../platform/enrichment/geoip.js';

/** One check: its name (for the report) and what it does; throws what start would. */
interface Check {
  readonly what: string;
  readonly run: () => void | Promise<unknown>;
}

function checks(config: Config, roles: readonly Role[]): Check[] {
  const tls = config.server.tls;
  const alerting = config.alerting;
  const has = (r: Role) => roles.includes(r);
  // What each role loads at start (cli/runtime.ts): a receivers-only instance never reads the rule files.
  return [
    ...(tls
      ? [
          {
            what: 'server.tls',
            run: () => {
              let cert: Buffer, key: Buffer;
              try {
                cert = readFileSync(tls.cert_path);
                key = readFileSync(tls.key_path);
              } catch (err) {
                throw new HooklogError('CONFIG_INVALID', `server.tls: ${errorMessage(err)}`, { cause: err });
              }
              try {
                createSecureContext({ cert, key });
              } catch (err) {
                throw new HooklogError(
                  'CONFIG_INVALID',
                  `server.tls: ${tls.cert_path} and ${tls.key_path} are not a certificate and its key: ${errorMessage(err)}`,
                  { cause: err },
                );
              }
            },
          },
        ]
      : []),
    { what: 'store migrations', run: () => loadMigrations(defaultMigrationsDir()) },
    ...(has('receivers') ? [{ what: 'token_hooks', run: () => checkTokenHooks(config.token_hooks) }] : []),
    ...(has('pollers') ? [{ what: 'orgs', run: () => checkOrgKeys(config.orgs) }] : []),
    // Every process that appends events looks them up (platform/enrichment/): each file must load before anything
    // is acknowledged. The stream opening checks them too; here they are reported with the rest.
    ...(config.enrichment.geoip.city || config.enrichment.geoip.asn
      ? [{ what: 'enrichment.geoip', run: () => void new GeoIp(config.enrichment.geoip) }]
      : []),
    // The SET signing key is loaded by every process (it serves the JWKS): one that cannot sign fails here.
    ...(config.response?.transmitter
      ? [{ what: 'response.transmitter', run: () => loadSetSigner(config.response!.transmitter!) }]
      : []),
    ...(alerting?.enabled && (has('alerting') || (has('sink') && alerting.clickhouse))
      ? [{ what: 'alerting', run: () => void loadConfiguredRules(alerting, openIpLists(config)) }]
      : []),
  ];
}

/**
 * Runs every check for `roles` (the config's, unless `start --roles` says
 * otherwise) and throws one CONFIG_INVALID listing each failure (not only the
 * first), each led by the section it concerns.
 */
export async function preflight(config: Config, roles: readonly Role[] = config.roles): Promise<void> {
  const problems: string[] = [];
  for (const c of checks(config, roles)) {
    try {
      await c.run();
    } catch (err) {
      const message = errorMessage(err);
      problems.push(message.startsWith(c.what) ? message : `${c.what}: ${message}`);
    }
  }
  if (problems.length > 0) throw new HooklogError('CONFIG_INVALID', problems.join('\n'));
}
