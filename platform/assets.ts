/**
 * The files other than compiled code that hooklog reads at run time (assets):
 * migrations, shipped rule content, and whatever a component adds later
 * (console pages, say). One rule for every one of them: an asset is a path
 * relative to the package root — the directory holding hooklog's own
 * package.json — and is read from there, whichever way hooklog runs:
 *
 * - from source (tsx): `<clone>/consumers/alerting/content/…`;
 * - built (`npm run build`, `node bin/hooklog.js`): the same file of the clone,
 *   as `dist/` holds only the bundled CLI (cli/build.ts), never a copy;
 * - the Docker image: `/app/…`, the Dockerfile copying each asset to the same
 *   relative path beside `/app/package.json`.
 *
 * So nothing is looked up beside a compiled module (`new URL('./x', import.meta.url)`
 * finds `dist/x`, which no build writes): register the asset here and ask
 * `assetPath`. `test/assets.test.ts` checks that every registered asset exists
 * and that the Dockerfile copies every file of it, laid out as the image lays
 * it out; `test/e2e/built-cli.test.ts` runs the built CLI with every section.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HooklogError } from './errors.js';

/** One asset: a directory below the package root and which of its files hooklog reads. */
export interface Asset {
  /** Relative to the package root, with forward slashes. */
  readonly dir: string;
  /** The files read at run time: a file-name pattern where `*` is any run of characters (not `/`). */
  readonly files: string;
  /**
   * Files `npm run build` writes into `dir` (the clone does not keep them; the Dockerfile copies them from
   * the build stage). Absent for assets kept in the repository.
   */
  readonly built?: readonly string[];
}

/** Every asset the built CLI reads. Add yours here (and to the Dockerfile: test/assets.test.ts says if you forget). */
export const ASSETS = {
  /** ClickHouse migrations, applied at start (platform/store/migrate.ts). */
  migrations: { dir: 'schemas/clickhouse', files: '*.sql' },
  /** Shipped detection content: the built-in rules and the packs users may point rule_paths at. */
  alertingContent: { dir: 'consumers/alerting/content', files: '*.yaml' },
  /** The console's browser bundle (console/build.ts, run by `npm run build`), served when console.enabled. */
  console: { dir: 'console/web/dist', files: '*', built: ['app.js', 'app.css'] },
} as const satisfies Record<string, Asset>;

export type AssetName = keyof typeof ASSETS;

const PACKAGE_NAME = 'hooklog';

/**
 * The nearest directory at or above `from` holding hooklog's package.json;
 * undefined when there is none (a copy of the code without its package).
 */
export function findPackageRoot(from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME) return dir;
      } catch {
        // Not readable as JSON: not ours; keep climbing.
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

let root: string | undefined;

/** hooklog's package root, found once from this module's own location. */
export function packageRoot(): string {
  if (root !== undefined) return root;
  const here = dirname(fileURLToPath(import.meta.url));
  const found = findPackageRoot(here);
  if (found === undefined)
    throw new HooklogError(
      'INTERNAL',
      `no ${PACKAGE_NAME} package.json at or above ${here}: hooklog's assets are read beside it (platform/assets.ts)`,
    );
  return (root = found);
}

/** The absolute path of an asset (or of a file in it), under `base` (default: the package root). */
export function assetPath(name: AssetName, file?: string, base = packageRoot()): string {
  const dir = join(base, ...ASSETS[name].dir.split('/'));
  return file === undefined ? dir : join(dir, file);
}

/** Whether `fileName` is one of the files `asset` reads (its `files` pattern). */
export function assetFileMatches(asset: Asset, fileName: string): boolean {
  return globToRegExp(asset.files).test(fileName);
}

/** `*` matches any run of characters except `/`; everything else is literal. */
export function globToRegExp(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*');
  return new RegExp(`^${body}$`);
}
