import type { Config } from './schema.js';

/** Every org the config names (hooks, polled orgs, token hooks, console grants, API keys), sorted, each once. */
export function configuredOrgs(config: Config): string[] {
  return [
    ...new Set([
      ...config.event_hooks.map((h) => h.org),
      ...config.orgs.map((o) => o.id),
      ...config.token_hooks.map((t) => t.org),
      ...(config.console.oidc?.grants.flatMap((g) => g.orgs) ?? []),
      ...config.api.keys.flatMap((k) => (typeof k === 'string' ? [] : k.orgs)),
    ]),
  ].sort();
}
