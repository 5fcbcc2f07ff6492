/**
 * Builds the CLI into one file, dist/hooklog.js (run by `npm run build`; bin/hooklog.js runs it): cli/hooklog.ts
 * and everything it imports, hooklog's modules and its dependencies alike, bundled by esbuild, with a source map
 * beside it (`NODE_OPTIONS=--enable-source-maps` maps stack traces to the sources).
 *
 * Why one file: a restart's first 204 waits for the process to load its code (issue 38). As some 350 compiled
 * modules and 500 dependency files, that was most of the CPU of a start (resolving, reading and compiling each file
 * apart, about 1 s of CPU on a loaded machine against 0.45 s bundled, `hooklog --version`).
 *
 * Made at build time: the config's JSON Schema (cli/config/schema.ts `configJsonSchema`), which every start reads
 * its config through.
 *
 * What stays outside: chdb (embedded ClickHouse), a native addon with its own loader, loaded with `require` when a
 * role opens the store (platform/store/store.ts; by `hooklog start` on the store's own thread, whose script is a
 * string in platform/store/chdb-thread.ts, so the build has no second entry point), and the assets
 * (platform/assets.ts), read beside package.json, which a file in dist/ finds as the compiled modules did. Type
 * checking is `npm run lint`'s (tsc --noEmit).
 *
 *   npx tsx cli/build.ts [--out <file>]
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { configJsonSchema } from './config/schema.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Modules loaded from node_modules at run time rather than bundled. */
export const EXTERNAL = ['chdb', 'chdb/*'] as const;

export async function buildCli(out = join(ROOT, 'dist', 'hooklog.js')): Promise<void> {
  await bundle(join(ROOT, 'cli', 'hooklog.ts'), out);
}

/**
 * Bundles `entry` and everything it imports into `out` exactly as the CLI is bundled (the options below). Also what
 * bench/token-hook/run.ts makes its servers with, so the bench measures the code users run, not the sources under a
 * loader.
 */
export async function bundle(entry: string, out: string): Promise<void> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20.11',
    outfile: out,
    external: [...EXTERNAL],
    // CommonJS dependencies (kafkajs, pino, …) `require` Node's own modules: an ES module has no `require`, so the
    // bundle makes one (resolving from dist/, where only the externals are looked up).
    banner: {
      js: "import { createRequire as __hooklogCreateRequire } from 'node:module';\nconst require = __hooklogCreateRequire(import.meta.url);",
    },
    // The config's JSON Schema, made here rather than at every start (cli/config/schema.ts).
    define: { HOOKLOG_CONFIG_JSON_SCHEMA: JSON.stringify(JSON.stringify(configJsonSchema())) },
    // Names as in the sources (error classes, constructors in logs), not renamed where two modules share one.
    keepNames: true,
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
    write: false,
  });
  mkdirSync(dirname(out), { recursive: true });
  // Written beside, then renamed over: a hooklog starting meanwhile (tests build while others run) reads one whole
  // build or the other, never half of one.
  for (const file of result.outputFiles) {
    const tmp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(tmp, file.contents);
    renameSync(tmp, file.path);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  await buildCli(values.out);
}
