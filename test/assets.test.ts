/**
 * Every asset the built CLI reads (platform/assets.ts) is where hooklog looks
 * for it in each layout it runs in: the clone (source and built CLI alike, as
 * dist/ holds no assets) and the Docker image, laid out from the Dockerfile's
 * COPY lines (test/support/dockerfile.ts) and resolved the way the compiled
 * code resolves it there, from /app/dist (the CLI is one file, dist/hooklog.js) up to /app/package.json.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ASSETS,
  assetFileMatches,
  assetPath,
  findPackageRoot,
  packageRoot,
  type Asset,
  type AssetName,
} from '../platform/assets.js';
import { layOutFinalStage, parseDockerfile } from './support/dockerfile.js';
import { REPO_DIR } from './support/cli.js';

const names = Object.keys(ASSETS) as AssetName[];
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The files of an asset in the clone: what must be reachable wherever hooklog runs. */
function filesOf(name: AssetName): string[] {
  const asset: Asset = ASSETS[name];
  if (asset.built) return [...asset.built];
  return readdirSync(assetPath(name, undefined, REPO_DIR)).filter((f) => assetFileMatches(asset, f));
}

/** The image as the Dockerfile `text` lays it out; returns the package root found from the compiled code's place. */
function image(text: string): { root: string | undefined; workdir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-image-'));
  dirs.push(dir);
  const ignore = readFileSync(join(REPO_DIR, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const workdir = layOutFinalStage(parseDockerfile(text), {
    context: REPO_DIR,
    ignore,
    // `npm run build` writes dist/ (the CLI bundled into dist/hooklog.js, platform/assets.ts with it); npm install
    // writes node_modules.
    // console/build.ts (also run by npm run build) writes the console's bundle.
    generated: { dist: [], node_modules: [], 'console/web/dist': [] },
    root: dir,
  });
  return { root: findPackageRoot(join(workdir, 'dist')), workdir };
}

/** Asset files the image at `root` lacks or holds with other bytes than the clone. */
function missingIn(root: string): string[] {
  return names.flatMap((name) => {
    const asset: Asset = ASSETS[name];
    // A built asset is made in the build stage: the image must take its directory from there.
    if (asset.built) return existsSync(assetPath(name, undefined, root)) ? [] : [asset.dir];
    return filesOf(name)
      .filter((f) => {
        try {
          return !readFileSync(assetPath(name, f, root)).equals(readFileSync(assetPath(name, f, REPO_DIR)));
        } catch {
          return true;
        }
      })
      .map((f) => `${ASSETS[name].dir}/${f}`);
  });
}

describe('assets (platform/assets.ts)', () => {
  it('resolves from the package root, found from the module itself', () => {
    expect(packageRoot()).toBe(REPO_DIR);
    expect(findPackageRoot(join(REPO_DIR, 'dist'))).toBe(REPO_DIR);
    for (const name of names) expect(filesOf(name).length, name).toBeGreaterThan(0);
    expect(filesOf('migrations')).toContain('001_events.sql');
    expect(filesOf('alertingContent')).toContain('hook-deliveries.yaml');
    // Tests beside the content are not content.
    expect(filesOf('alertingContent').some((f) => f.endsWith('.ts'))).toBe(false);
  });

  it('the Dockerfile copies every file of every asset to where the compiled CLI looks for it', () => {
    const { root, workdir } = image(readFileSync(join(REPO_DIR, 'Dockerfile'), 'utf8'));
    expect(root).toBe(workdir);
    expect(missingIn(root!)).toEqual([]);
  });

  it('notices a Dockerfile that leaves an asset out, or the package.json the root is found by', () => {
    const text = readFileSync(join(REPO_DIR, 'Dockerfile'), 'utf8');
    const withoutContent = text
      .split('\n')
      .filter((l) => !l.includes('consumers/alerting/content'))
      .join('\n');
    const { root } = image(withoutContent);
    expect(missingIn(root!)).toEqual(filesOf('alertingContent').map((f) => `consumers/alerting/content/${f}`));
    const withoutConsole = text
      .split('\n')
      .filter((l) => !l.includes('console/web/dist'))
      .join('\n');
    expect(missingIn(image(withoutConsole).root!)).toEqual(['console/web/dist']);
    const withoutManifest = text
      .split('\n')
      .filter((l) => !/^COPY package\.json \.\/$/.test(l.trim()))
      .join('\n');
    expect(image(withoutManifest).root).toBeUndefined();
  });
});
