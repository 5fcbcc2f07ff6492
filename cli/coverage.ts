/**
 * `hooklog coverage`: how complete the event hooks are for one org, from the
 * named queries hook_coverage and hook_deliveries_lost (so the command, the
 * query API and `hooklog query` agree), plus totals over the range.
 *
 * Only the event types the org's hooks carry count: a System Log type no hook
 * subscribes to is not one the hooks missed (counting them once reported
 * "90% missed by hooks" for hooks that lost nothing). The types come from the
 * hooks' `register:` sections, and from what the hooks delivered in the range
 * (all there is to go on for a hook registered by hand); the rest are listed
 * as left out.
 */
import { HooklogError } from '../platform/errors.js';
import type { Config } from './config/schema.js';
import type { ResultSet } from './format.js';
import { render } from './format.js';
import { runQueryCommand } from './query.js';
import { configuredOrgs } from './config/orgs.js';

export interface CoverageReport {
  readonly org: string;
  readonly since: string;
  readonly until: string;
  readonly coverage: ResultSet;
  readonly lost: ResultSet;
  readonly latency: ResultSet;
  /**
   * The event types counted: those the org's hooks carry. `from`: `register` when a hook of the org has a
   * `register:` section (its types, and any other type the hooks delivered), else `delivered` (what they delivered).
   */
  readonly hook_types: { readonly from: 'register' | 'delivered'; readonly types: readonly string[] };
  /** Event types in the range the org's hooks do not carry, with their events: in no figure of the report. */
  readonly left_out: ReadonlyArray<{ readonly event_type: string; readonly events: number }>;
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
/** Left-out types named in the table before "and N more" (all of them are in the JSON). */
const LEFT_OUT_SHOWN = 20;
/** An event type is the service's, not ours: shown at most this long. */
const TYPE_CHARS = 120;

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
  if (!configuredOrgs(config).includes(opts.org)) {
    throw new HooklogError(
      'QUERY_INVALID',
      `unknown org ${JSON.stringify(clip(opts.org))}: the config names ${
        configuredOrgs(config)
          .map((o) => JSON.stringify(o))
          .join(', ') || 'no org'
      }`,
    );
  }
  const until = opts.until ?? new Date().toISOString();
  const params = { org: opts.org, since: opts.since, until, limit: ROWS };
  const all = await run('hook_coverage', params);
  const lost = await run('hook_deliveries_lost', params);
  const latency = await run('hook_latency', params);
  const sum = (rs: ResultSet, c: string) => rs.rows.reduce((a, r) => a + Number(r[c] ?? 0), 0);

  const registered = config.event_hooks.filter((h) => h.org === opts.org && h.register);
  const delivered = all.rows.filter((r) => Number(r.hooks_only ?? 0) + Number(r.both ?? 0) > 0);
  const carried = new Set([
    ...registered.flatMap((h) => h.register!.event_types),
    ...delivered.map((r) => String(r.event_type)),
  ]);
  const coverage: ResultSet = { columns: all.columns, rows: all.rows.filter((r) => carried.has(String(r.event_type))) };
  const leftOut = new Map<string, number>();
  for (const r of all.rows) {
    const t = String(r.event_type);
    if (!carried.has(t)) leftOut.set(t, (leftOut.get(t) ?? 0) + Number(r.events ?? 0));
  }

  const events = sum(coverage, 'events');
  const logOnly = sum(coverage, 'log_only');
  return {
    org: opts.org,
    since: opts.since,
    until,
    coverage,
    lost,
    latency,
    hook_types: { from: registered.length > 0 ? 'register' : 'delivered', types: [...carried].sort() },
    left_out: [...leftOut]
      .map(([event_type, n]) => ({ event_type, events: n }))
      .sort((a, b) => b.events - a.events || a.event_type.localeCompare(b.event_type)),
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

/** A value from the service or the command line, bounded for a line of text, its invisible characters shown. */
function clip(v: string): string {
  const shown = v.length > TYPE_CHARS ? `${v.slice(0, TYPE_CHARS)}…` : v;
  return shown.replace(
    // eslint-disable-next-line no-control-regex -- the control characters are what it finds
    /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The sentence saying which types were counted and which were left out. */
function typesLine(r: CoverageReport): string {
  const from =
    r.hook_types.from === 'register'
      ? "the types the org's hooks subscribe to (register:) or delivered"
      : "the types the org's hooks delivered in the range (no hook of the org has a register: section)";
  const counted = `Counted: ${r.hook_types.types.length} event type(s), ${from}.`;
  if (r.left_out.length === 0) return counted;
  const shown = r.left_out.slice(0, LEFT_OUT_SHOWN).map((l) => `${clip(l.event_type)} (${l.events})`);
  const more = r.left_out.length > LEFT_OUT_SHOWN ? `, and ${r.left_out.length - LEFT_OUT_SHOWN} more` : '';
  const n = r.left_out.reduce((a, l) => a + l.events, 0);
  return `${counted}\nLeft out (no hook of the org carries them): ${r.left_out.length} type(s), ${n} events: ${shown.join(', ')}${more}.`;
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
          hook_types: r.hook_types,
          left_out: r.left_out,
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
    typesLine(r),
    '',
  ].join('\n');
}
