import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { durationsFromReport, knownSlowMs, readDurations, slowestFirst } from './durations.js';
import { REPO_DIR } from './cli.js';

const root = '/clone';
const report = {
  testResults: [
    { name: '/clone/a.test.ts', startTime: 1_000, endTime: 3_000 },
    { name: '/clone/test/e2e/b.test.ts', startTime: 1_000, endTime: 61_000 },
    { name: 'c.test.ts', startTime: 5, endTime: 10 },
    { name: '/clone/bad.test.ts', startTime: 10, endTime: 5 },
    { name: 42, startTime: 1, endTime: 2 },
  ],
};

describe('slowest files first', () => {
  it("reads each file's duration from vitest's JSON report, relative to the root, skipping what makes no sense", () => {
    expect([...durationsFromReport(report, root)]).toEqual([
      ['a.test.ts', 2_000],
      ['test/e2e/b.test.ts', 60_000],
      ['c.test.ts', 5],
    ]);
    expect(durationsFromReport({ other: 1 }, root).size).toBe(0);
    expect(durationsFromReport(null, root).size).toBe(0);
  });

  it('starts the files of known duration first, longest first, the last report before the fallback, the rest as given', () => {
    const last = durationsFromReport(report, root);
    const files = ['new.test.ts', 'a.test.ts', 'c.test.ts', 'test/e2e/b.test.ts', 'other.test.ts', 'slow.test.ts'];
    const fallback = new Map([
      ['slow.test.ts', 30_000],
      ['a.test.ts', 90_000],
    ]);
    expect(slowestFirst(files, (f) => f, last, fallback)).toEqual([
      'test/e2e/b.test.ts',
      'slow.test.ts',
      'a.test.ts', // its report's 2 s, not the fallback's 90 s
      'c.test.ts',
      'new.test.ts',
      'other.test.ts',
    ]);
  });

  it('has the slow files of a fresh clone, and a missing or broken report is no report', () => {
    // Every file named is one the run has (a renamed file would silently start last again).
    expect(knownSlowMs().size).toBeGreaterThan(5);
    for (const file of knownSlowMs().keys()) expect(existsSync(join(REPO_DIR, file)), file).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'hooklog-durations-'));
    try {
      expect(readDurations(join(dir, 'missing.json'), dir).size).toBe(0);
      writeFileSync(join(dir, 'half.json'), '{"testResults": [');
      expect(readDurations(join(dir, 'half.json'), dir).size).toBe(0);
      writeFileSync(join(dir, 'r.json'), JSON.stringify(report));
      expect(readDurations(join(dir, 'r.json'), root).get('test/e2e/b.test.ts')).toBe(60_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
