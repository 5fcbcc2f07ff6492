/**
 * `hooklog coverage`: how complete the event hooks are for one org, from the
 * named queries hook_coverage and hook_deliveries_lost (so the command, the
 * query API and `hooklog query` agree), plus totals over the range.
 */
import type { Config } from './config/schema.js';
import type { ResultSet } from './format.js';
import { render } from './format.js';
import { runQueryCommand } from './query.js';

export interface CoverageReport {
  readonly org: string;
  readonly since: string;
  readonly until: string;
  readonly coverage: ResultSet;
  readonly lost: ResultSet;
  readonly latency: ResultSet;
  readonly totals: {
    readonly events: number;
    readonly hooks_only: number;
    readonly log_only: number;
    readonly both: number;
    /** Share of the events the hooks did not deliver (System Log only), 0..1. */
    readonly missed_by_hooks: number;
    readonly lost_deliveries: number;
    /** Over the whole range (null when the hooks delivered nothing in it). */
    readonly hook_p50_ms: number | null;
    readonly hook_p99_ms: number | null;
  };
}

const ROWS = '10000';

function num(v: unknown): number | null {
  return v === null || v === undefined || Number.isNaN(Number(v)) ? null : Number(v);
}

/**
 * The report; `run` runs a named query (by default as `hooklog query` does: through a running
 * hooklog's admin socket or the store; the console passes its process's own store).
 */
export async function coverageReport(
  config: Config,
  opts: { org: string; since: string; until?: string },
  run: (name: string, params: Record<string, string>) => Promise<ResultSet> = (name, params) =>
    runQueryCommand(config, name, params),
): Promise<CoverageReport> {
  const until = opts.until ?? new Date().toISOString();
  const params = { org: opts.org, since: opts.since, until, limit: ROWS };
  const coverage = await run('hook_coverage', params);
  const lost = await run('hook_deliveries_lost', params);
  const latency = await run('hook_latency', params);
  const sum = (rs: ResultSet, c: string) => rs.rows.reduce((a, r) => a + Number(r[c] ?? 0), 0);
  const events = sum(coverage, 'events');
  const logOnly = sum(coverage, 'log_only');
  return {
    org: opts.org,
    since: opts.since,
    until,
    coverage,
    lost,
    latency,
    totals: {
      events,
      hooks_only: sum(coverage, 'hooks_only'),
      log_only: logOnly,
      both: sum(coverage, 'both'),
      missed_by_hooks: events === 0 ? 0 : logOnly / events,
      lost_deliveries: sum(lost, 'lost'),
      hook_p50_ms: num(latency.rows[0]?.p50_ms),
      hook_p99_ms: num(latency.rows[0]?.p99_ms),
    },
  };
}

export function renderCoverage(r: CoverageReport, format: 'table' | 'json'): string {
  if (format === 'json') {
    return (
      JSON.stringify(
        {
          org: r.org,
          since: r.since,
          until: r.until,
          totals: r.totals,
          coverage: r.coverage.rows,
          lost_deliveries: r.lost.rows,
        },
        null,
        2,
      ) + '\n'
    );
  }
  const t = r.totals;
  const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
  return [
    `Coverage for org ${r.org}, ${r.since} .. ${r.until}`,
    '',
    render(r.coverage, 'table'),
    'Lost deliveries (event_hook.delivery failures):',
    render(r.lost, 'table'),
    `Totals: ${t.events} events; hooks only ${t.hooks_only}, System Log only ${t.log_only} (${pct(t.missed_by_hooks)} missed by hooks), ` +
      `both ${t.both}; hook latency p50 ${t.hook_p50_ms ?? '-'} ms, p99 ${t.hook_p99_ms ?? '-'} ms; ${t.lost_deliveries} lost deliveries.`,
    '',
  ].join('\n');
}
