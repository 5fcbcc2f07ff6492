/**
 * The HTTP routes reference: every route of the app `hooklog start` serves
 * (cli/app.ts), read from its router, and what makes each one served. The app
 * is built, never listened on, from a configuration that enables every
 * section; each optional part is then left out in turn, and the routes that go
 * with it are the ones it serves. Nothing is started: what the routes would
 * use (the stream, the store) is a stand-in that fails if touched.
 */
import type Koa from 'koa';
import type Router from '@koa/router';
import { createApp, type AppDeps } from '../../cli/app.js';
import { consoleDeps } from '../../cli/console.js';
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

function everything(): AppDeps {
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

/** Each optional part of the app, what serves it in `hooklog start`, and the app without it. */
const PARTS: ReadonlyArray<{ when: string; without: (d: AppDeps) => AppDeps }> = [
  { when: 'the `receivers` role', without: (d) => ({ ...d, receivers: false }) },
  { when: 'the `receivers` role, with `token_hooks`', without: ({ tokenHooks: _, ...d }) => d },
  { when: 'the `receivers` role, with `ssf_receivers`', without: ({ ssf: _, ...d }) => d },
  { when: '`api.keys` set (the query API)', without: ({ store: _, ...d }) => d },
  { when: '`response.transmitter`', without: ({ ssfProvider: _, ...d }) => d },
  { when: '`console.enabled`, with the `receivers` role', without: ({ console: _, ...d }) => d },
];

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
  const when = new Map<string, string>();
  for (const part of PARTS) {
    const without = new Set(routesOf(createApp(part.without(all))));
    for (const route of served) if (!without.has(route) && !when.has(route)) when.set(route, part.when);
  }
  return [
    preamble(
      'HTTP routes reference',
      'Every route `hooklog start` serves, from the router of its app (`cli/app.ts`), and what makes it served. What\n' +
        'each does and how it authenticates: [HTTP endpoints](../integrate/http.md).',
    ),
    table(
      ['Method', 'Path', 'Served with'],
      served.map((r) => {
        const [method = '', path = ''] = r.split(' ');
        return [method, code(path), when.get(r) ?? 'always'];
      }),
    ) + '\n',
  ].join('\n');
}
