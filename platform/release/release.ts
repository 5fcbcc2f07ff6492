/**
 * Which release this is, and what it promises about the data it leaves behind. `hooklog --version` prints it;
 * the data directory's and the database's release markers (markers.ts) record it at every start, so that an older
 * hooklog refuses what a newer one has used. Change it with every release (CHANGELOG.md says which commit each one
 * is); `release.test.ts` checks that package.json carries the same version.
 */
import { HooklogError } from '../errors.js';

/** This release (semantic versioning: MAJOR.MINOR.PATCH). */
export const HOOKLOG_VERSION = '0.2.0';

/**
 * The oldest release that may run on a data directory or database this release has used: every release from it
 * up to this one reads and writes what this one leaves (records of the previous format, tables expanded, never
 * contracted under it). Raised only by a release whose data an older one would misread or lose (a contraction),
 * and never above this release itself. 0.1.0 runs beside 0.2.0: the same migrations (001-033) and record formats
 * (0.1.0's records are 0.2.0's format 1 without its header).
 */
export const OLDEST_COMPATIBLE = '0.1.0';

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;

/** `a` before `b` (negative), equal (0), after (positive), by semantic version; throws on anything else. */
export function compareVersions(a: string, b: string): number {
  const pa = SEMVER.exec(a);
  const pb = SEMVER.exec(b);
  if (!pa || !pb) {
    throw new HooklogError(
      'RECORD_INVALID',
      `not a release version (MAJOR.MINOR.PATCH): ${JSON.stringify(pa ? b : a).slice(0, 40)}`,
    );
  }
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return d;
  }
  return 0;
}

/** Whether `s` is a release version hooklog understands (a marker holds attacker-reachable text: check before use). */
export function isVersion(s: unknown): s is string {
  return typeof s === 'string' && s.length <= 32 && SEMVER.test(s);
}

/** The later of two versions. */
export function laterVersion(a: string, b: string): string {
  return compareVersions(a, b) >= 0 ? a : b;
}
