/**
 * The console's pages: one HTML shell (no inline script or style, so the CSP
 * holds) that loads the bundled app, served for every page URL once the page
 * passed the same checks its data will: signed in (else to sign-in, coming
 * back to the same URL), and the org the URL names — in its path, its query,
 * or behind the alert it names — one the principal may see (else 404). So a
 * page is testable by its URL alone, and another org's page does not exist.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { maySeeOrg } from '../platform/access.js';
import { assetPath } from '../platform/assets.js';
import { HooklogError } from '../platform/errors.js';
import { orgsOfAlerts } from './alerts.js';
import type { ConsoleContext } from './context.js';
import { securityHeaders } from './http.js';

/** Files the build writes (console/build.ts) and their types; nothing else is served from the directory. */
const ASSET_TYPES: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/** Where the built assets are: the `console` asset (platform/assets.ts), from source, dist/ and the image alike. */
export function assetsDir(): string {
  const dir = assetPath('console');
  if (!existsSync(join(dir, 'app.js')))
    throw new HooklogError(
      'CONFIG_INVALID',
      `the console is enabled but its assets are not built (run npm run build); looked in ${dir}`,
    );
  return dir;
}

const SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hooklog console</title>
<link rel="stylesheet" href="/console/assets/app.css">
<script type="module" src="/console/assets/app.js"></script>
</head>
<body><div id="app"><noscript>The hooklog console needs JavaScript.</noscript></div></body>
</html>
`;

/** Page URLs and the org check each needs beyond the query's `org`. */
const PAGES: ReadonlyArray<{ path: string; org?: (ctx: Context, c: ConsoleContext) => Promise<string | null> }> = [
  { path: '/console/alerts' },
  {
    path: '/console/alerts/:id',
    // The alert's org whoever asks; the check below refuses (and records) another org's as a 404.
    org: async (ctx, c) => (await orgsOfAlerts(c.store, [ctx.params.id ?? ''])).get(ctx.params.id ?? '') ?? null,
  },
  { path: '/console/users/:org/:user', org: async (ctx) => ctx.params.org ?? null },
  { path: '/console/ips/:ip' },
  { path: '/console/events' },
  { path: '/console/search' },
  { path: '/console/queries' },
  {
    path: '/console/queries/:name',
    org: async (ctx, c) => (c.queries.list().some((q) => q.name === ctx.params.name) ? '' : null),
  },
  { path: '/console/status' },
  { path: '/console/coverage' },
];

function notFoundPage(ctx: Context): void {
  securityHeaders(ctx, 'no-store');
  ctx.status = 404;
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = 'Not found.';
}

export function mountPages(router: Router, c: ConsoleContext): void {
  const dir = assetsDir();
  const assets = new Map(
    Object.entries(ASSET_TYPES).map(([f, type]) => [f, { type, body: readFileSync(join(dir, f)) }]),
  );

  router.get('/console/assets/:file', (ctx) => {
    const a = assets.get(ctx.params.file ?? '');
    if (!a) return notFoundPage(ctx);
    securityHeaders(ctx, 'assets');
    ctx.type = a.type;
    ctx.body = a.body;
  });

  router.get('/console', (ctx) => ctx.redirect('/console/alerts'));
  router.get('/console/', (ctx) => ctx.redirect('/console/alerts'));

  for (const page of PAGES) {
    router.get(page.path, async (ctx) => {
      let who;
      try {
        who = await c.auth.principalOf(ctx, false);
      } catch (err) {
        c.log.warn({ path: ctx.path, err }, 'console_page_unavailable');
        securityHeaders(ctx, 'no-store');
        ctx.status = 503;
        ctx.type = 'text/plain; charset=utf-8';
        ctx.body = 'Your access cannot be checked right now (the identity service or the stream); try again shortly.';
        return;
      }
      if (!who) {
        securityHeaders(ctx, 'no-store');
        return ctx.redirect(`/console/auth/login?${new URLSearchParams({ return_to: ctx.originalUrl })}`);
      }
      const queryOrgs = ctx.query.org;
      if (Array.isArray(queryOrgs)) return notFoundPage(ctx);
      if (queryOrgs !== undefined && !maySeeOrg(who.principal, queryOrgs)) {
        c.auth.refused(ctx, who, 'other_org', queryOrgs);
        return notFoundPage(ctx);
      }
      if (page.org) {
        const org = await page.org(ctx, c);
        // '' : the page exists and names no org of its own; null: it does not exist (for this principal).
        if (org === null) return notFoundPage(ctx);
        if (org !== '' && !maySeeOrg(who.principal, org)) {
          c.auth.refused(ctx, who, 'other_org', org);
          return notFoundPage(ctx);
        }
      }
      securityHeaders(ctx, 'no-store');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = SHELL;
    });
  }
}
