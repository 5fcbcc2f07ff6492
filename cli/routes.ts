/**
 * The table of what hooklog serves over HTTP: each kind of route, the router paths it covers, the part of the
 * app that serves it and the URLs it has under a config. `hooklog start` prints its banner from it (every URL
 * this process serves) and `npm run docs` writes docs/reference/http-routes.md from it, checking it against the
 * app's router: a route of the router that no entry covers, or an entry served without its part, fails the
 * generation, so the banner, the reference and the app cannot disagree.
 */
import type { AppDeps } from './app.js';
import type { Config } from './config/schema.js';
import { JWKS_PATH, SSF_CONFIGURATION_PATH } from '../receivers/ssf/well-known.js';

/** The part of the app (a field of AppDeps) whose presence makes a route served; without one, always served. */
export type RoutePart = 'receivers' | 'tokenHooks' | 'ssf' | 'ssfProvider' | 'store' | 'console';

/** One URL of a route under a config, as the banner prints it. */
export interface RouteUrl {
  readonly path: string;
  /** What is behind it (a hook's org and auth header), when the route has one URL per configured item. */
  readonly note?: string;
}

export interface RouteSpec {
  /** What it is, as the banner names it. */
  readonly name: string;
  /** The router paths it covers: patterns as mounted, or `prefix/*` for every path under `prefix`. */
  readonly paths: readonly string[];
  readonly part?: RoutePart;
  /** When `hooklog start` serves it, in the reference's words (roles and configuration keys). */
  readonly servedWith: string;
  /** The URLs it has under `config` (paths, one per hook or receiver where the path names one). */
  readonly urls: (config: Config) => readonly RouteUrl[];
}

const fixed =
  (...paths: string[]) =>
  (): readonly RouteUrl[] =>
    paths.map((path) => ({ path }));

export const ROUTES: readonly RouteSpec[] = [
  {
    name: 'health',
    paths: ['/healthz', '/readyz'],
    servedWith: 'always',
    urls: fixed('/healthz', '/readyz'),
  },
  {
    name: 'event hook',
    paths: ['/hooks/events/:hookId'],
    part: 'receivers',
    servedWith: 'the `receivers` role',
    urls: (c) =>
      c.event_hooks.map((h) => ({
        path: `/hooks/events/${h.id}`,
        note: `"${h.id}", org ${h.org}, auth header ${h.auth.header}`,
      })),
  },
  {
    name: 'token hook',
    paths: ['/hooks/token/:hookId'],
    part: 'tokenHooks',
    servedWith: 'the `receivers` role, with `token_hooks`',
    urls: (c) =>
      c.token_hooks.map((h) => ({
        path: `/hooks/token/${h.id}`,
        note: `"${h.id}", org ${h.org}, ${h.auth.type === 'header' ? `auth header ${h.auth.header}` : 'OAuth'}`,
      })),
  },
  {
    name: 'SSF receiver',
    paths: ['/hooks/ssf/:receiverId'],
    part: 'ssf',
    servedWith: 'the `receivers` role, with `ssf_receivers`',
    urls: (c) => c.ssf_receivers.map((r) => ({ path: `/hooks/ssf/${r.id}`, note: `"${r.id}", org ${r.org}` })),
  },
  {
    name: 'SET transmitter',
    paths: [SSF_CONFIGURATION_PATH, JWKS_PATH],
    part: 'ssfProvider',
    servedWith: '`response.transmitter`',
    urls: fixed(SSF_CONFIGURATION_PATH, JWKS_PATH),
  },
  {
    name: 'query API',
    paths: ['/api/queries', '/api/queries/:name'],
    part: 'store',
    servedWith: 'the `receivers` role, with `api.keys` or the console',
    urls: fixed('/api/queries'),
  },
  {
    name: 'console',
    paths: ['/console', '/console/*'],
    part: 'console',
    servedWith: '`console.enabled`, with the `receivers` role',
    urls: fixed('/console'),
  },
  {
    name: 'metrics',
    paths: ['/metrics'],
    servedWith: 'always',
    urls: fixed('/metrics'),
  },
];

/** Whether the app built from `deps` serves `spec`'s routes. */
export function isServed(spec: RouteSpec, deps: AppDeps): boolean {
  if (spec.part === undefined) return true;
  if (spec.part === 'receivers') return deps.receivers !== false;
  return deps[spec.part] !== undefined;
}

/** The entry covering a router path (`/console/api/me` is the console's), if any. */
export function specOf(path: string): RouteSpec | undefined {
  return ROUTES.find((s) => s.paths.some((p) => (p.endsWith('/*') ? path.startsWith(p.slice(0, -1)) : p === path)));
}

/** Every URL the app built from `deps` serves, at `base` (hooklog's URL), for the start banner. */
export function servedUrls(deps: AppDeps, base: string): Array<{ name: string; url: string; note?: string }> {
  return ROUTES.filter((s) => isServed(s, deps)).flatMap((s) =>
    s.urls(deps.config).map((u) => ({ name: s.name, url: `${base}${u.path}`, ...(u.note ? { note: u.note } : {}) })),
  );
}

/** The banner `hooklog start` prints: one line per URL, aligned. */
export function banner(urls: ReadonlyArray<{ name: string; url: string; note?: string }>): string {
  const width = Math.max(0, ...urls.map((u) => u.name.length));
  return urls.map((u) => `  ${u.name.padEnd(width)}  ${u.url}${u.note ? `  (${u.note})` : ''}\n`).join('');
}
