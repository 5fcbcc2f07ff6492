/**
 * How long each test file took last time, so a run can start the slowest files first: with two workers, a
 * 150 s file started last is the run's whole tail, started first it overlaps a hundred short ones. Pure
 * except `readDurations`, which reads a file. test/support/sequencer.ts is vitest's side of it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';

/**
 * The slowest files of the last CI runs (seconds, on the loaded 2-core CI machine), for a fresh clone that has
 * no `.cache/vitest-results.json` yet. Vitest's own order for files it has never run is largest first, and
 * most of these are small (`pollers-kafka.test.ts` is four lines), so without this they started last.
 * Only the order uses them: a figure out of date costs tail time, never a result.
 */
export const KNOWN_SLOW_SECONDS: Readonly<Record<string, number>> = {
  // A whole run's report, taken beside other work (load ~25 on 2 cores) on 2026-11-29: seconds here are ~2.5x a
  // quiet CI's, and only their order matters.
  // New files, timed alone on the same loaded machine.
  // Alone at load 11-16 on 2026-11-29, building the previous release with tsc --noCheck (previous-release.ts): 63 s.
  'test/e2e/rolling-upgrade.test.ts': 63,
  'test/e2e/fleet-sticky.test.ts': 69,
  'test/e2e/backup-restore.test.ts': 60,
  'consumers/clickhouse-sink/crash-kafka.test.ts': 117,
  'consumers/clickhouse-sink/crash-embedded.test.ts': 112,
  'test/e2e/fleet-identity.test.ts': 104,
  'test/e2e/built-cli.test.ts': 100,
  'test/e2e/response-loop.test.ts': 82,
  'test/e2e/event-hooks-stream-down.test.ts': 82,
  'test/e2e/rate-budget-fleet.test.ts': 80,
  'test/e2e/fleet.test.ts': 78,
  'consumers/alerting/risk/kill.test.ts': 67,
  'consumers/alerting/kill.test.ts': 64,
  'test/e2e/pollers-kafka.test.ts': 61,
  'test/e2e/reconcile-kafka.test.ts': 59,
  'test/e2e/quiet-outage.test.ts': 54,
  'test/e2e/hook-rotation.test.ts': 53,
};

/**
 * The part of vitest's JSON report (`--reporter=json`) read here: each file's start and end, as the first of its
 * tests started and the last ended (its imports and set-up before them are not counted: a hint can live with that).
 */
interface JsonReport {
  readonly testResults?: ReadonlyArray<{
    readonly name?: unknown;
    readonly startTime?: unknown;
    readonly endTime?: unknown;
  }>;
}

/**
 * Each file's duration in ms from a vitest JSON report, keyed by its path relative to `root` (the report holds
 * absolute paths, of the clone that wrote it). Anything else in the file (an older format, half a write) yields
 * what could be read: the order is a hint, never a reason to fail a run.
 */
export function durationsFromReport(report: unknown, root: string): Map<string, number> {
  const out = new Map<string, number>();
  const results = (report as JsonReport | null)?.testResults;
  if (!Array.isArray(results)) return out;
  for (const r of results) {
    const { name, startTime, endTime } = r as Record<string, unknown>;
    if (typeof name !== 'string' || typeof startTime !== 'number' || typeof endTime !== 'number') continue;
    if (!(endTime >= startTime)) continue;
    out.set(isAbsolute(name) ? relative(root, name) : name, endTime - startTime);
  }
  return out;
}

/** `durationsFromReport` of a report file; an empty map when it is missing or unreadable. */
export function readDurations(path: string, root: string): Map<string, number> {
  if (!existsSync(path)) return new Map();
  try {
    return durationsFromReport(JSON.parse(readFileSync(path, 'utf8')) as unknown, root);
  } catch {
    return new Map();
  }
}

/**
 * `files` (paths relative to the root) with every file of a known duration first, longest first, then the
 * rest in the order given. A duration is the last report's, else `fallback`'s (ms).
 */
export function slowestFirst<T>(
  files: readonly T[],
  pathOf: (f: T) => string,
  last: ReadonlyMap<string, number>,
  fallback: ReadonlyMap<string, number> = new Map(),
): T[] {
  const known = (f: T) => last.get(pathOf(f)) ?? fallback.get(pathOf(f));
  const timed = files.filter((f) => known(f) !== undefined).sort((a, b) => known(b)! - known(a)!);
  return [...timed, ...files.filter((f) => known(f) === undefined)];
}

/** KNOWN_SLOW_SECONDS in ms. */
export function knownSlowMs(): Map<string, number> {
  return new Map(Object.entries(KNOWN_SLOW_SECONDS).map(([f, s]) => [f, s * 1000]));
}
