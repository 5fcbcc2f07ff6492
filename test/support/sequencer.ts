/**
 * Vitest's file order for `npm test`: the slowest files first (test/support/durations.ts), so that the last
 * minutes of a run are many short files over both workers rather than one long file alone. Durations come from
 * the last run's report (`.cache/vitest-results.json`, or the one before it, which .ci/run keeps while it writes
 * the next), else KNOWN_SLOW_SECONDS; vitest's own order (failed first, then by its cached duration or size)
 * decides among the rest.
 */
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { knownSlowMs, readDurations, slowestFirst } from './durations.js';

/** Where .ci/run writes the JSON report of a run, and where it moves the last one before the next. */
export const REPORTS = ['.cache/vitest-results.json', '.cache/vitest-results.previous.json'];

export default class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const base = await super.sort(files);
    const last = REPORTS.map((r) => readDurations(join(root, r), root)).find((d) => d.size > 0) ?? new Map();
    return slowestFirst(base, (f) => relative(root, f.moduleId), last, knownSlowMs());
  }
}
