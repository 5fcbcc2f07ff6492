/**
 * The outcome of `hooklog rules test --cases` for people (one line per case
 * that did not pass, the rules without cases, a closing count) and for CI
 * (JSON, JUnit XML). Pure functions of the report.
 */
import { relative } from 'node:path';
import type { CasesReport, CaseResult, RuleCoverage } from './run.js';

export interface ReportOptions {
  /** Paths are shown relative to this (the working directory). */
  readonly cwd?: string;
  /** Rules without a firing and a non-firing case fail the run. */
  readonly requireCases?: boolean;
}

/** Rules lacking a case that fires, or one that does not. */
export function missingCases(r: CasesReport): Array<RuleCoverage & { readonly lacks: string }> {
  return r.coverage.flatMap((c) => {
    if (c.firing === 0 && c.silent === 0) return [{ ...c, lacks: 'no cases' }];
    if (c.firing === 0) return [{ ...c, lacks: 'no case that alerts' }];
    if (c.silent === 0) return [{ ...c, lacks: 'no case that does not alert' }];
    return [];
  });
}

/** Whether the run failed: a case failed or could not run, or (requireCases) a rule lacks cases. */
export function failed(r: CasesReport, o: ReportOptions = {}): boolean {
  return r.results.some((x) => x.status !== 'passed') || (o.requireCases === true && missingCases(r).length > 0);
}

function counts(r: CasesReport) {
  const by = (s: CaseResult['status']) => r.results.filter((x) => x.status === s).length;
  return { passed: by('passed'), failed: by('failed'), errors: by('error') };
}

/** A file as shown: relative to the working directory when under it, else as given. */
function shown(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  return rel && !rel.startsWith('..') ? rel : file;
}

const where = (file: string, line: number, cwd: string) => `${shown(file, cwd)}:${line}`;

/** One line per case that did not pass, one per rule lacking cases, and a closing count. */
export function renderTable(r: CasesReport, o: ReportOptions = {}): string {
  const cwd = o.cwd ?? process.cwd();
  const lines: string[] = [];
  for (const x of r.results) {
    if (x.status === 'passed') continue;
    const label = x.status === 'failed' ? 'FAIL' : 'ERROR';
    const what = x.name ? `${x.rule || '?'} › ${x.name}` : x.rule || '(file)';
    lines.push(`${label} ${what} (${where(x.file, x.line, cwd)}): ${x.message}`);
  }
  const missing = missingCases(r);
  for (const m of missing)
    lines.push(`${o.requireCases ? 'MISSING' : 'note'} ${m.rule.id} (${shown(m.file, cwd)}): ${m.lacks}`);
  const c = counts(r);
  const none = missing.filter((m) => m.lacks === 'no cases').length;
  lines.push(
    `${r.coverage.length} rules, ${r.results.length} cases: ${c.passed} passed, ${c.failed} failed` +
      `${c.errors ? `, ${c.errors} could not run` : ''}; ${none} rule${none === 1 ? '' : 's'} without cases` +
      ` (${(r.ms / 1000).toFixed(2)} s)`,
  );
  return lines.join('\n') + '\n';
}

/** The whole report as JSON: a summary, every case, and the rules lacking cases. */
export function renderJson(r: CasesReport, o: ReportOptions = {}): string {
  const cwd = o.cwd ?? process.cwd();
  return (
    JSON.stringify(
      {
        summary: { rules: r.coverage.length, cases: r.results.length, ...counts(r), ms: Math.round(r.ms) },
        cases: r.results.map((x) => ({
          rule: x.rule,
          name: x.name,
          where: where(x.file, x.line, cwd),
          status: x.status,
          ...(x.message ? { message: x.message } : {}),
          alerts: x.alerts.map((a) => ({
            key: a.key,
            title: a.rule_title,
            severity: a.severity,
            count: a.count,
            ...(a.findings !== undefined ? { findings: a.findings } : {}),
            event_time: a.event_time,
          })),
        })),
        missing: missingCases(r).map((m) => ({
          rule: m.rule.id,
          file: shown(m.file, cwd),
          lacks: m.lacks,
        })),
      },
      null,
      2,
    ) + '\n'
  );
}

/** Text for an XML attribute or element: markup escaped, and the control characters XML 1.0 cannot hold dropped. */
function xml(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) continue;
    out += /[&<>"']/.test(ch) ? `&#${c};` : ch;
  }
  return out;
}

/** JUnit XML: a suite per file, a test case per case (classname: the rule); rules without cases as skipped. */
export function renderJunit(r: CasesReport, o: ReportOptions = {}): string {
  const cwd = o.cwd ?? process.cwd();
  const files = new Map<string, string[]>();
  const stats = new Map<string, { tests: number; failures: number; errors: number; skipped: number; ms: number }>();
  const add = (file: string, body: string, kind: 'ok' | 'failure' | 'error' | 'skipped', ms: number) => {
    const f = shown(file, cwd);
    const s = stats.get(f) ?? { tests: 0, failures: 0, errors: 0, skipped: 0, ms: 0 };
    s.tests++;
    s.ms += ms;
    if (kind === 'failure') s.failures++;
    if (kind === 'error') s.errors++;
    if (kind === 'skipped') s.skipped++;
    stats.set(f, s);
    files.set(f, [...(files.get(f) ?? []), body]);
  };
  for (const x of r.results) {
    const f = shown(x.file, cwd);
    const attrs = `classname="${xml(x.rule || f)}" name="${xml(x.name || '(file)')}" file="${xml(f)}" line="${x.line}" time="${(x.ms / 1000).toFixed(3)}"`;
    const tag = x.status === 'failed' ? 'failure' : 'error';
    const inner =
      x.status === 'passed'
        ? ''
        : `\n      <${tag} message="${xml(x.message)}">${xml(`${where(x.file, x.line, cwd)}: ${x.message}`)}</${tag}>\n    `;
    add(x.file, `    <testcase ${attrs}>${inner}</testcase>`, x.status === 'passed' ? 'ok' : tag, x.ms);
  }
  for (const m of missingCases(r)) {
    const attrs = `classname="${xml(m.rule.id)}" name="(cases)" file="${xml(shown(m.file, cwd))}" time="0"`;
    const inner = o.requireCases
      ? `<failure message="${xml(m.lacks)}">${xml(m.lacks)}</failure>`
      : `<skipped message="${xml(m.lacks)}"/>`;
    add(m.file, `    <testcase ${attrs}>${inner}</testcase>`, o.requireCases ? 'failure' : 'skipped', 0);
  }
  const total = [...stats.values()].reduce(
    (a, s) => ({ tests: a.tests + s.tests, failures: a.failures + s.failures, errors: a.errors + s.errors }),
    { tests: 0, failures: 0, errors: 0 },
  );
  const suites = [...files].map(([f, cases]) => {
    const s = stats.get(f)!;
    return `  <testsuite name="${xml(f)}" tests="${s.tests}" failures="${s.failures}" errors="${s.errors}" skipped="${s.skipped}" time="${(s.ms / 1000).toFixed(3)}">\n${cases.join('\n')}\n  </testsuite>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="hooklog rules test --cases" tests="${total.tests}" failures="${total.failures}" errors="${total.errors}" time="${(r.ms / 1000).toFixed(3)}">\n${suites.join('\n')}\n</testsuites>\n`;
}
