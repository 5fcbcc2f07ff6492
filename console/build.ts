/**
 * Builds the console's browser assets into console/web/dist (run by `npm run
 * build`; the server reads them from there, in the clone and in the image):
 * app.js, the app and its libraries (Preact, uPlot) bundled and minified by
 * esbuild, and app.css, the console's stylesheet with uPlot's. Nothing is
 * loaded from elsewhere at run time.
 *
 *   npx tsx console/build.ts [--out <dir>]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const WEB = fileURLToPath(new URL('./web/', import.meta.url));

export async function buildConsoleAssets(out = join(WEB, 'dist')): Promise<void> {
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [join(WEB, 'main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outfile: join(out, 'app.js'),
    legalComments: 'none',
    logLevel: 'warning',
  });
  const uplotCss = readFileSync(createRequire(import.meta.url).resolve('uplot/dist/uPlot.min.css'), 'utf8');
  writeFileSync(join(out, 'app.css'), `${readFileSync(join(WEB, 'app.css'), 'utf8')}\n${uplotCss}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  await buildConsoleAssets(values.out);
}
