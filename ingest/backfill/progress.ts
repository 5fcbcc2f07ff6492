/**
 * What `hooklog backfill` shows while it runs: on a terminal one line
 * redrawn in place (a bar of the time covered, events, requests, estimated
 * time left); otherwise a plain line at most every few seconds, for logs.
 * Pure formatting; the estimate is this run's pace over what is left.
 */
import type { BackfillProgress } from './backfill.js';

export function fraction(p: BackfillProgress): number {
  if (p.done) return 1;
  if (p.coveredToMs === null) return 0;
  return Math.min(1, Math.max(0, (p.coveredToMs - p.sinceMs) / (p.untilMs - p.sinceMs)));
}

/** Seconds left at this run's pace, or null before there is a pace. */
export function etaSeconds(p: BackfillProgress, now: number): number | null {
  const f = fraction(p);
  const before =
    p.resumedFrom?.coveredToMs == null
      ? 0
      : Math.max(0, (p.resumedFrom.coveredToMs - p.sinceMs) / (p.untilMs - p.sinceMs));
  const done = f - before;
  const elapsed = (now - p.startedMs) / 1000;
  if (f >= 1) return 0;
  if (done <= 0 || elapsed <= 0) return null;
  return Math.round((elapsed / done) * (1 - f));
}

export function duration(s: number | null): string {
  if (s === null) return '?';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function covered(p: BackfillProgress): string {
  return p.coveredToMs === null ? '-' : new Date(p.coveredToMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The terminal line: `[#####.....]  52.1% to 2026-11-20T10:00:00Z  12,345 events  40 requests  ETA 1m20s`. */
export function barLine(p: BackfillProgress, now: number, width = 30): string {
  const f = fraction(p);
  const filled = Math.round(f * width);
  const pct = `${(f * 100).toFixed(1)}%`.padStart(6);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${pct} to ${covered(p)}  ${p.events.toLocaleString('en-US')} events  ${p.requests} requests  ETA ${duration(etaSeconds(p, now))}`;
}

/** The line for logs and pipes. */
export function plainLine(p: BackfillProgress, now: number): string {
  const f = fraction(p);
  return `backfill ${(f * 100).toFixed(1)}% covered_to=${covered(p)} events=${p.events} requests=${p.requests} eta=${duration(etaSeconds(p, now))}`;
}

export interface ProgressWriter {
  update(p: BackfillProgress): void;
  finish(p: BackfillProgress): void;
}

export function progressWriter(
  out: NodeJS.WritableStream & { isTTY?: boolean },
  now: () => number = Date.now,
  everyMs = 5_000,
): ProgressWriter {
  let last = 0;
  if (out.isTTY) {
    return {
      update: (p) => void out.write(`\r${barLine(p, now())}\x1b[K`),
      finish: (p) => void out.write(`\r${barLine(p, now())}\x1b[K\n`),
    };
  }
  let written = '';
  const write = (p: BackfillProgress) => {
    const line = plainLine(p, now());
    if (line !== written) out.write(`${line}\n`);
    written = line;
  };
  return {
    update(p) {
      if (now() - last < everyMs) return;
      last = now();
      write(p);
    },
    // The final state always, but not twice (a finished window resumed is done at once).
    finish: write,
  };
}
