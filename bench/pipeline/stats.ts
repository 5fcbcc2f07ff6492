/** Pure helpers for the bench's figures: summaries of repeated runs and the printed table. */

export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly runs: number;
}

/** Median (mean of the middle two for an even count), min and max. */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new Error('summarize: no values');
  // NaN is a run without this figure (a drain with no steady state at this N): left out, and all-NaN is NaN.
  const s = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (s.length === 0) return { median: NaN, min: NaN, max: NaN, runs: 0 };
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]!, runs: s.length };
}

export interface Row {
  readonly mode: string;
  readonly rates: readonly number[];
  /** Compare this row's median with the baselines' (false for figures that are not end to end). */
  readonly compare: boolean;
}

/**
 * A fixed-width table: mode, median/min/max of the figure (with `decimals`), and the median's ratio to each
 * baseline row's median.
 */
export function formatTable(rows: readonly Row[], baselines: readonly string[], unit = 'ev/s', decimals = 0): string {
  const medians = new Map(rows.map((r) => [r.mode, summarize(r.rates).median]));
  const header = ['mode', `median ${unit}`, 'min', 'max', 'runs', ...baselines.map((b) => `/ ${b}`)];
  const lines = rows.map((r) => {
    const s = summarize(r.rates);
    const ratios = baselines.map((b) => {
      const base = medians.get(b);
      return r.compare && base && !Number.isNaN(s.median) ? `${(s.median / base).toFixed(2)}x` : '-';
    });
    const fmt = (v: number) =>
      Number.isNaN(v)
        ? '-'
        : v.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
    return [r.mode, fmt(s.median), fmt(s.min), fmt(s.max), String(s.runs), ...ratios];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const render = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [render(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(render)].join('\n');
}
