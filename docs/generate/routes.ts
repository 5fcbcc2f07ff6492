/**
 * The HTTP routes reference: every route of the app `hooklog start` serves
 * (cli/app.ts), read from its router, with what makes each one served from
 * the table the start banner is printed from (cli/routes.ts). The app is
 * built, never listened on, from a configuration that enables every section;
 * each optional part is then left out in turn, and the table must say the
 * same: a route no entry covers, or an entry whose routes stay without its
 * part, fails the generation. Nothing is started: what the routes would use
 * (the stream, the store) is a stand-in that fails if touched.
 */
import type Koa from 'koa';
import type Router from '@koa/router';
import { createApp, type AppDeps } from '../../cli/app.js';
import { consoleDeps } from '../../cli/console.js';
import { ROUTES, isServed, specOf, type RoutePart } from '../../cli/routes.js';
import { configSchema } from '../../cli/config/schema.js';
import { createLogger } from '../../platform/log.js';
import type { Store } from '../../platform/store/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import type { SsfReceivers } from '../../receivers/ssf/routes.js';
import { code, preamble, table } from './markdown.js';

/** What listing routes must never use: any property read fails, naming it. */
function untouched<T extends object>(what: string): T {
  return new Proxy({} as T, {
    get: (_, p) => {
      throw new Error(`${what}.${String(p)} was used while listing the routes`);
    },
  });
}

const SECRET = 'reference-secret-0123456789abcdef';

/** The app's dependencies with every optional part present (a config enabling each section). */
export function everything(): AppDeps {
  const config = configSchema.parse({
    event_hooks: [{ id: 'h', org: 'o', auth: { header: 'authorization', secrets: [SECRET] } }],
    api: { keys: [SECRET] },
    console: {
      enabled: true,
      public_url: 'https://hooklog.example',
      session_secret: SECRET,
      oidc: { issuer: 'https://idp.example', client_id: 'c', grants: [{ group: 'g', orgs: ['o'], role: 'viewer' }] },
    },
  });
  const logger = createLogger({ level: 'silent' });
  const stream = untouched<Stream>('stream');
  const store = untouched<Store>('store');
  return {
    config,
    stream,
    topics: topicNames(config.stream.topic_prefix),
    probes: [],
    logger,
    receivers: true,
    tokenHooks: { get: () => undefined, logger, stop: async () => undefined },
    ssf: { receivers: new Map(), telemetry: untouched<SsfReceivers['telemetry']>('ssf telemetry') },
    store,
    ssfProvider: {
      issuer: 'https://hooklog.example',
      jwksUri: 'https://hooklog.example/.well-known/jwks.json',
      jwks: { keys: [] },
    },
    console: consoleDeps(config, stream, store, logger),
  };
}

/** The app's dependencies without `part`: what `hooklog start` passes when that part is not configured here. */
function without(deps: AppDeps, part: RoutePart): AppDeps {
  if (part === 'receivers') return { ...deps, receivers: false };
  const { [part]: _, ...rest } = deps;
  return rest;
}

/** `METHOD path` of every route the app's router serves (HEAD, which Koa adds to every GET, left out). */
export function routesOf(app: Koa): string[] {
  const routers = app.middleware.flatMap((m) => {
    const router = (m as { router?: Router }).router;
    return router ? [router] : [];
  });
  return routers.flatMap((r) =>
    r.stack.flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${layer.path}`)),
  );
}

export function routesReference(): string {
  const all = everything();
  const served = routesOf(createApp(all));
  const pathOf = (route: string) => route.split(' ')[1] ?? '';
  for (const route of served)
    if (!specOf(pathOf(route))) throw new Error(`${route} is served but no entry of cli/routes.ts covers it`);
  for (const spec of ROUTES) {
    if (!isServed(spec, all)) throw new Error(`cli/routes.ts "${spec.name}": not served with every part`);
    const mine = served.filter((r) => specOf(pathOf(r)) === spec);
    if (mine.length === 0) throw new Error(`cli/routes.ts "${spec.name}": the app serves none of its paths`);
    if (!spec.part) continue;
    const left = new Set(routesOf(createApp(without(all, spec.part))));
    const stays = mine.filter((r) => left.has(r));
    if (stays.length > 0)
      throw new Error(`cli/routes.ts "${spec.name}": ${stays.join(', ')} served without ${spec.part}`);
  }
  return [
    preamble(
      'HTTP routes reference',
      'Every route `hooklog start` serves, from the router of its app (`cli/app.ts`), and what makes it served\n' +
        '(`cli/routes.ts`, the table `hooklog start` prints its banner from: each of these it serves, with its URL, one\n' +
        'per configured hook or receiver). What each does and how it authenticates: [HTTP endpoints](../integrate/http.md).',
    ),
    table(
      ['Method', 'Path', 'Served with'],
      served.map((r) => {
        const [method = '', path = ''] = r.split(' ');
        return [method, code(path), specOf(path)?.servedWith ?? ''];
      }),
    ) + '\n',
  ].join('\n');
}
