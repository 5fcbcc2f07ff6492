/**
 * The content hooklog ships carries its own tests: every rule in content/*.yaml
 * has a case that alerts and one that does not, written beside it, and they
 * all pass — stream rules through the engine, scheduled rules' SQL on a
 * throwaway chdb, as `hooklog rules test --cases` runs them. Every case is
 * decisive: the opposite verdict fails on the alerts it produced.
 */
import { describe, expect, it } from 'vitest';
import { openCaseStore } from '../../../cli/rules-test.js';
import { prepareQuery } from '../../../analytics/run.js';
import { silentLogger } from '../../../platform/log.js';
import { loadCases } from '../cases/load.js';
import { missingCases, renderTable } from '../cases/report.js';
import { judge, runCases } from '../cases/run.js';
import { CONTENT_DIR } from '../index.js';
import { loadRulePaths } from '../rules/sources.js';

describe('the shipped content (content/*.yaml) against its own cases', () => {
  it('every case passes, every rule has a firing and a non-firing case, every case is decisive', async () => {
    const loaded = loadCases([CONTENT_DIR]);
    const report = await runCases(loaded, {
      allowedLatenessMs: 300_000,
      openStore: () => openCaseStore(silentLogger()),
      resolveQuery: (name, params) => prepareQuery(name, 'hooklog_cases', params),
    });
    const notPassed = report.results.filter((r) => r.status !== 'passed');
    expect(notPassed, renderTable(report)).toEqual([]);

    const shipped = loadRulePaths([CONTENT_DIR]).flatMap((l) => l.rules.map((r) => r.id));
    expect(shipped.length).toBeGreaterThanOrEqual(62);
    expect(report.coverage.map((c) => c.rule.id).sort()).toEqual([...shipped].sort());
    expect(missingCases(report).map((m) => `${m.rule.id}: ${m.lacks}`)).toEqual([]);
    // Every kind of rule shipped is covered through its own path: scheduled ones too.
    expect(new Set(loaded.cases.map((c) => c.rule.kind))).toEqual(
      new Set(['match', 'threshold', 'distinct', 'sequence', 'unfollowed', 'stateful', 'first_seen', 'scheduled']),
    );

    // A case that would also pass with the opposite verdict proves nothing.
    const byWhere = new Map(loaded.cases.map((c) => [`${c.file}:${c.line}`, c]));
    const indecisive = report.results.filter((r) => {
      const c = byWhere.get(`${r.file}:${r.line}`)!;
      return (
        judge({ ...c.spec, alert: !c.spec.alert, alerts: undefined, key: undefined, count: undefined }, r.alerts) ===
        null
      );
    });
    expect(indecisive.map((r) => `${r.rule} › ${r.name}`)).toEqual([]);
  });
});
