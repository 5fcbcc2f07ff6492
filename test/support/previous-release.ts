/**
 * The previous release, built from git history at the commit CHANGELOG.md names for it, for tests that run it beside
 * this build (the rolling upgrade): `git worktree add --detach` of that commit into the temp directory, this clone's
 * node_modules linked in (the dependencies of two consecutive releases are the same; a release that changes them
 * says so in CHANGELOG.md), and its CLI built the way that release builds it: bundled by its cli/build.ts into
 * dist/hooklog.js, or, before that script (0.1.0), compiled by `tsc -p tsconfig.build.json` into dist/cli/ (the
 * CLI only, as before). Kept between runs, keyed by commit.
 *
 * tsc runs with --noCheck: the release's code was type-checked when it was made, and under its isolatedModules and
 * verbatimModuleSyntax each file is emitted on its own, so the check changes nothing in dist/ (0.1.0's 650 files
 * compared byte for byte, with and without it), and without it the build takes 9.6 s instead of 17.4 s (7.0 s of CPU
 * instead of 16.7; alone, load 2.3-2.5) inside the rolling upgrade's test, the first file a run starts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOOKLOG_VERSION } from '../../platform/release/release.js';
import { REPO_DIR } from './cli.js';

export interface PreviousRelease {
  readonly version: string;
  readonly commit: string;
  /** `node <bin> start …` runs it. */
  readonly bin: string;
}

/** The release before this one in CHANGELOG.md, and its commit. */
export function previousReleaseEntry(): { version: string; commit: string } {
  const changelog = readFileSync(join(REPO_DIR, 'CHANGELOG.md'), 'utf8');
  const sections = changelog.split(/^## /m).slice(1);
  const i = sections.findIndex((s) => s.startsWith(`${HOOKLOG_VERSION}\n`));
  const prev = sections[i + 1];
  if (i < 0 || !prev) throw new Error(`CHANGELOG.md has no release before ${HOOKLOG_VERSION}`);
  const version = prev.split('\n', 1)[0]!.trim();
  const commit = /Commit: `([0-9a-f]{40})`/.exec(prev)?.[1];
  if (!commit) throw new Error(`CHANGELOG.md names no commit for ${version}`);
  return { version, commit };
}

/** Builds (once per commit) and returns the previous release. */
export function buildPreviousRelease(): PreviousRelease {
  const { version, commit } = previousReleaseEntry();
  const dir = join(tmpdir(), `hooklog-release-${version}-${commit.slice(0, 12)}`);
  const bin = join(dir, 'bin', 'hooklog.js');
  // What the release's bin/hooklog.js runs, once built (see above).
  const builtFiles = [join(dir, 'dist', 'hooklog.js'), join(dir, 'dist', 'cli', 'hooklog.js')];
  // The cache may outlive the clone that made it: its node_modules link always points at this clone's.
  const linkModules = () => {
    rmSync(join(dir, 'node_modules'), { force: true });
    symlinkSync(join(REPO_DIR, 'node_modules'), join(dir, 'node_modules'), 'dir');
  };
  if (builtFiles.some((f) => existsSync(f))) {
    linkModules();
    return { version, commit, bin };
  }
  const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_DIR, stdio: 'pipe' });
  if (existsSync(dir)) {
    rmSync(dir, { recursive: true, force: true });
    git('worktree', 'prune');
  }
  git('worktree', 'add', '--detach', dir, commit);
  linkModules();
  const build = existsSync(join(dir, 'cli', 'build.ts'))
    ? [join(REPO_DIR, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'cli/build.ts']
    : [join(REPO_DIR, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--noCheck'];
  execFileSync(process.execPath, build, { cwd: dir, stdio: 'pipe' });
  return { version, commit, bin };
}
