/**
 * What the config asks to be registered: one `DesiredHook` per event or token
 * hook with a `register:` section, with the name, URI, header and secret the
 * service should hold. Pure: no I/O.
 *
 * The secret registered is the hook's first `auth.secrets` entry (a rotation
 * lists the new one first, the old one second: the receiver accepts both). The
 * service never returns a secret, so hooklog registers a fingerprint of it
 * beside it, as a custom header (`x-hooklog-secret-id`, an HMAC of a fixed text
 * keyed by the secret: it tells which secret is registered without revealing
 * it), and compares fingerprints.
 */
import { createHmac } from 'node:crypto';
import type { EventHookConfig } from '../event-hooks/config.js';
import type { TokenHookConfig } from '../token-hook/config.js';
import type { HookRegistrationConfig } from './config.js';

export const SECRET_ID_HEADER = 'x-hooklog-secret-id';
export const TOKEN_TRANSFORM = 'com.okta.oauth2.tokens.transform';

export type HookKind = 'event' | 'inline';

export interface DesiredHook {
  readonly kind: HookKind;
  /** hooklog's id of the hook (`event_hooks[].id`, `token_hooks[].id`). */
  readonly id: string;
  /** The orgs[] entry that manages it. */
  readonly org: string;
  /** `<name_prefix><id>`: how hooklog finds it among the org's hooks. */
  readonly name: string;
  readonly uri: string;
  readonly header: string;
  /** Every accepted secret, the registered one first. */
  readonly secrets: readonly string[];
  /** Event types (event hooks), sorted. */
  readonly eventTypes: readonly string[];
}

/** What registration reads of the whole config. */
export interface RegistrationInput {
  readonly hook_registration: HookRegistrationConfig;
  readonly event_hooks: readonly EventHookConfig[];
  readonly token_hooks: readonly TokenHookConfig[];
  readonly orgs: ReadonlyArray<{ readonly id: string }>;
}

/** `x-hooklog-secret-id`'s value for a secret: 16 hex digits. */
export function secretId(secret: string): string {
  return createHmac('sha256', secret).update('hooklog hook secret id v1').digest('hex').slice(0, 16);
}

/**
 * A URI as WHATWG URL parsing writes it (scheme and host lower-cased, the scheme's default port dropped, the path's
 * dot segments resolved): the form the service stores. hooklog registers and compares URIs in this form, so a
 * `public_url` written otherwise (`HTTPS://host`, `https://host:443`) matches what the service holds.
 */
export function normalUri(uri: string): string {
  return URL.canParse(uri) ? new URL(uri).href : uri;
}

/** How a hook is named in every line hooklog prints about it. */
export function hookLabel(h: { readonly kind: HookKind; readonly id: string }): string {
  return `${h.kind === 'event' ? 'event hook' : 'token hook'} "${h.id}"`;
}

export function desiredHooks(cfg: RegistrationInput): DesiredHook[] {
  const base = (cfg.hook_registration.public_url ?? '').replace(/\/+$/, '');
  const out: DesiredHook[] = [];
  for (const h of cfg.event_hooks) {
    if (!h.register) continue;
    out.push({
      kind: 'event',
      id: h.id,
      org: h.register.org ?? h.org,
      name: `${cfg.hook_registration.name_prefix}${h.id}`,
      uri: normalUri(`${base}/hooks/events/${h.id}`),
      header: h.auth.header,
      secrets: h.auth.secrets,
      eventTypes: [...new Set(h.register.event_types)].sort(),
    });
  }
  for (const h of cfg.token_hooks) {
    if (!h.register || h.auth.type !== 'header') continue;
    out.push({
      kind: 'inline',
      id: h.id,
      org: h.register.org ?? h.org,
      name: `${cfg.hook_registration.name_prefix}${h.id}`,
      uri: normalUri(`${base}/hooks/token/${h.id}`),
      header: h.auth.header,
      secrets: h.auth.secrets,
      eventTypes: [],
    });
  }
  return out;
}

/** Cross-field mistakes, each with the config path to name (cli/config/schema.ts reports them at load). */
export function registrationIssues(cfg: RegistrationInput): Array<{ path: PropertyKey[]; message: string }> {
  const issues: Array<{ path: PropertyKey[]; message: string }> = [];
  const orgs = new Set(cfg.orgs.map((o) => o.id));
  const check = (section: 'event_hooks' | 'token_hooks', i: number, org: string, own: boolean) => {
    if (!cfg.hook_registration.public_url)
      issues.push({
        path: [section, i, 'register'],
        message: 'registering a hook needs hook_registration.public_url (where the service reaches hooklog)',
      });
    if (!orgs.has(org))
      issues.push({
        path: [section, i, 'register', ...(own ? ['org'] : [])],
        message: `org "${org}" is managed by an orgs[] entry (base_url and credentials); there is none with id "${org}"`,
      });
  };
  cfg.event_hooks.forEach((h, i) => h.register && check('event_hooks', i, h.register.org ?? h.org, !!h.register.org));
  cfg.token_hooks.forEach((h, i) => {
    if (!h.register) return;
    check('token_hooks', i, h.register.org ?? h.org, !!h.register.org);
    if (h.auth.type !== 'header')
      issues.push({
        path: ['token_hooks', i, 'register'],
        message:
          'hooklog registers token hooks with a header secret (auth.type header); an OAuth one is set up in the admin console',
      });
  });
  return issues;
}
