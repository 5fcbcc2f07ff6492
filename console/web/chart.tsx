/**
 * Charts with uPlot (canvas: labels are drawn, never parsed; its legend sets
 * text with textContent). Every label (title, series, categories, legend
 * values) goes through `label` (../display.ts): bounded, invisible characters
 * drawn. A time series when the data has a time column, else
 * bars over the first text column. `onPick` gets the index of a clicked point,
 * so a chart links to the events behind it like any other figure.
 */
import uPlot from 'uplot';
import { useEffect, useRef } from 'preact/hooks';
import { label } from '../display.js';

export interface ChartData {
  /** Epoch seconds for time series; 0..n-1 for bars. */
  readonly x: number[];
  readonly series: ReadonlyArray<{ readonly label: string; readonly values: Array<number | null> }>;
  /** Bars: the category of each x. */
  readonly categories?: readonly string[];
}

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

export function Chart({ data, title, onPick }: { data: ChartData; title: string; onPick?: (i: number) => void }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || data.x.length === 0) return;
    const cats = data.categories;
    const width = Math.max(320, Math.min(960, el.clientWidth || 800));
    const short = (s: string) => label(s, 17);
    const opts: uPlot.Options = {
      width,
      height: 260,
      title: label(title, 120),
      // Bars start at zero; a time series' y range is uPlot's own.
      scales: cats
        ? {
            x: { time: false, range: () => [-0.5, cats.length - 0.5] },
            y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
          }
        : { x: { time: true } },
      series: [
        cats ? { label: 'item', value: (_u, v) => (v === null ? '' : label(cats[v] ?? '', 80)) } : { label: 'time' },
        ...data.series.map((s, i) => ({
          label: label(s.label, 60),
          stroke: COLOURS[i % COLOURS.length],
          fill: cats ? `${COLOURS[i % COLOURS.length]}55` : undefined,
          width: 2,
          ...(cats ? { paths: uPlot.paths.bars!({ size: [0.6, 64] }), points: { show: false } } : {}),
        })),
      ],
      axes: [
        cats
          ? { values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? short(cats[v] ?? '') : '')), rotate: 0 }
          : {},
        {},
      ],
    };
    const plot = new uPlot(opts, [data.x, ...data.series.map((s) => s.values)] as uPlot.AlignedData, el);
    const click = () => {
      const i = plot.cursor.idx;
      if (onPick && i !== null && i !== undefined) onPick(i);
    };
    plot.over.addEventListener('click', click);
    return () => {
      plot.over.removeEventListener('click', click);
      plot.destroy();
    };
  }, [data, title]);
  return <div ref={box} class="chart" role="img" aria-label={label(title, 120)} />;
}

const TIME_TEXT = /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?$/;
const isNum = (v: unknown) =>
  typeof v === 'number' || (typeof v === 'string' && /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(v));

/** Epoch seconds of ClickHouse's DateTime text (UTC). */
export function epochS(t: string): number {
  return Date.parse(`${t.replace(' ', 'T')}${t.endsWith('Z') ? '' : 'Z'}`) / 1000;
}

/**
 * A chart for a query result, or null when it has nothing to draw. When the
 * first column is a time (a bucket, an hour), its numeric columns over time;
 * otherwise bars of the first numeric column over the first column (first 40
 * rows; the table beside it has the rest).
 */
export function chartOf(columns: readonly string[], rows: ReadonlyArray<Record<string, unknown>>): ChartData | null {
  if (rows.length === 0 || columns.length < 2) return null;
  const all = (c: string, p: (v: unknown) => boolean) => rows.every((r) => p(r[c]));
  const first = columns[0]!;
  const isTime = all(first, (v) => typeof v === 'string' && TIME_TEXT.test(v));
  const nums = columns.filter((c) => c !== first && all(c, isNum)).slice(0, isTime ? 6 : 1);
  if (nums.length === 0) return null;
  if (isTime) {
    const sorted = [...rows].sort((a, b) => epochS(String(a[first])) - epochS(String(b[first])));
    return {
      x: sorted.map((r) => epochS(String(r[first]))),
      series: nums.map((c) => ({ label: c, values: sorted.map((r) => Number(r[c])) })),
    };
  }
  const top = rows.slice(0, 40);
  return {
    x: top.map((_, i) => i),
    categories: top.map((r) => {
      const v = r[first];
      return typeof v === 'string' ? v : JSON.stringify(v);
    }),
    series: nums.map((c) => ({ label: c, values: top.map((r) => Number(r[c])) })),
  };
}
