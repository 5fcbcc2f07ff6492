/**
 * The release's facts agree with each other and with what the repository says (package.json, CHANGELOG.md), and the
 * data directory's marker (data-dir-marker.ts) refuses what a newer release requires, reading only.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_DIR, runCli } from '../../test/support/cli.js';
import { currentRelease, highestMigration, versionText } from './current.js';
import { DATA_DIR_MARKER, checkDataDir, claimDataDir, readDataDirMarker } from './data-dir-marker.js';
import { HOOKLOG_VERSION, OLDEST_COMPATIBLE, compareVersions, isVersion } from './release.js';

const dirs: string[] = [];
const fresh = () => {
  const d = mkdtempSync(join(tmpdir(), 'hooklog-release-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('the release', () => {
  it('is the version package.json carries, and CHANGELOG.md describes it and names the previous one by commit', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_DIR, 'package.json'), 'utf8')) as { version: string };
    expect(pkg.version).toBe(HOOKLOG_VERSION);
    const changelog = readFileSync(join(REPO_DIR, 'CHANGELOG.md'), 'utf8');
    const headings = [...changelog.matchAll(/^## (\d+\.\d+\.\d+)$/gm)].map((m) => m[1]!);
    expect(headings[0]).toBe(HOOKLOG_VERSION);
    // Newest first, and the oldest release this one runs beside is one of them, with the commit it is.
    expect([...headings].sort((a, b) => compareVersions(b, a))).toEqual(headings);
    expect(headings).toContain(OLDEST_COMPATIBLE);
    const section = changelog.split(`## ${OLDEST_COMPATIBLE}\n`)[1]!;
    const commit = /Commit: `([0-9a-f]{40})`/.exec(section)?.[1];
    expect(commit, `CHANGELOG.md names ${OLDEST_COMPATIBLE}'s commit`).toBeDefined();
    if (existsSync(join(REPO_DIR, '.git'))) {
      expect(() => execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: REPO_DIR })).not.toThrow();
    }
  });

  it('orders versions numerically and reads only MAJOR.MINOR.PATCH', () => {
    expect(compareVersions('0.10.0', '0.9.3')).toBeGreaterThan(0);
    expect(compareVersions('1.0.0', '1.0.0')).toBe(0);
    expect(isVersion('0.2.0')).toBe(true);
    expect(isVersion('0.2')).toBe(false);
    expect(isVersion('0.2.0-rc1')).toBe(false);
    expect(() => compareVersions('x', '0.1.0')).toThrow(/not a release version/);
    expect(compareVersions(OLDEST_COMPATIBLE, HOOKLOG_VERSION)).toBeLessThanOrEqual(0);
  });

  it('`hooklog --version` prints the version, the schema version and the record formats', async () => {
    const run = await runCli(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${versionText()}\n`);
    expect(run.stdout).toContain(`hooklog ${HOOKLOG_VERSION}\n`);
    expect(run.stdout).toContain(`ClickHouse schema: ${highestMigration()} `);
    expect(highestMigration()).toBeGreaterThanOrEqual(33);
    expect(run.stdout).toMatch(/^ {2}logs +writes 1, reads unversioned, 1$/m);
    expect(run.stdout).toMatch(/^ {2}cursors +writes 1, reads unversioned, 1$/m);
  }, 60_000);
});

describe('the data directory marker', () => {
  const now = currentRelease();
  const release = (version: string, oldestCompatible: string) => ({ ...now, version, oldestCompatible });

  it('is recorded by every start; a later compatible start keeps the highest requirement', () => {
    const dir = fresh();
    expect(checkDataDir(dir, now)).toBeNull();
    claimDataDir(dir, now);
    claimDataDir(dir, release('0.9.0', HOOKLOG_VERSION));
    claimDataDir(dir, now);
    const marker = readDataDirMarker(dir)!;
    expect(marker.newest).toBe('0.9.0');
    expect(marker.requires).toBe(HOOKLOG_VERSION);
    expect(Object.keys(marker.releases).sort()).toEqual([HOOKLOG_VERSION, '0.9.0'].sort());
    expect(marker.releases[HOOKLOG_VERSION]).toMatchObject({ requires: OLDEST_COMPATIBLE, schema: now.schema });
  });

  it('refuses, naming both versions, when a newer release requires more, and leaves the file as it was', () => {
    const dir = fresh();
    claimDataDir(dir, release('0.9.0', '0.9.0'));
    const bytes = readFileSync(join(dir, DATA_DIR_MARKER));
    expect(() => claimDataDir(dir, now)).toThrow(
      `was used by hooklog 0.9.0, which needs hooklog 0.9.0 or later to run on it; this is hooklog ${HOOKLOG_VERSION}`,
    );
    expect(readFileSync(join(dir, DATA_DIR_MARKER))).toEqual(bytes);
  });

  it('refuses a marker it cannot read rather than guess', () => {
    const dir = fresh();
    writeFileSync(join(dir, DATA_DIR_MARKER), '{"newest": "0.9", "requires": 3}');
    expect(() => checkDataDir(dir, now)).toThrow(/not a release marker hooklog can read/);
    writeFileSync(join(dir, DATA_DIR_MARKER), '{not json');
    expect(() => claimDataDir(dir, now)).toThrow(expect.objectContaining({ code: 'RELEASE_REFUSED' }));
    expect(readFileSync(join(dir, DATA_DIR_MARKER), 'utf8')).toBe('{not json');
  });
});
