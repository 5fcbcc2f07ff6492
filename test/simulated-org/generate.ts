/**
 * Events for the simulated org: shapes from the project's fixtures (LogEvents
 * and legacy events, test/fixtures), each copy with a fresh id and its own times. History
 * comes in bursts, with `published` up to 30 s before persistence, so inside
 * a burst the persistence order (the paging order) is not the published order.
 */
import { randomUUID } from 'node:crypto';
import { legacyEvents, validLogEvents } from '../fixtures/index.js';
import { seededRandom } from '../support/random.js';
import type { NewEvent } from './store.js';

type Json = Record<string, unknown>;

let logTemplates: Json[] | undefined;
let legacyTemplates: Json[] | undefined;

/** LogEvent shapes: the project's fixture events (test/fixtures). */
export function logEventTemplates(): Json[] {
  logTemplates ??= validLogEvents();
  return logTemplates;
}

export function legacyEventTemplates(): Json[] {
  legacyTemplates ??= legacyEvents();
  return legacyTemplates;
}

/** A LogEvent copied from a template with a fresh uuid (published is set by the store). */
export function logEvent(i: number): Json {
  const t = logEventTemplates();
  return { ...t[i % t.length]!, uuid: randomUUID() };
}

/** A legacy event with a fresh `tev…` id. */
export function legacyEvent(i: number): Json {
  const t = legacyEventTemplates();
  return { ...t[i % t.length]!, eventId: `tev${randomUUID().replaceAll('-', '')}${i}` };
}

export interface HistoryOptions {
  readonly count: number;
  /** History spans [now − days, now − 1 min]. */
  readonly days: number;
  readonly now: number;
  readonly kind: 'log' | 'legacy';
  /** Published times in these [from, to) ranges are not generated (keeps test expectations away from moving edges). */
  readonly exclude?: ReadonlyArray<readonly [number, number]>;
  readonly seed?: number;
}

/** `count` events in persistence order, in bursts of about 20. */
export function history(opts: HistoryOptions): NewEvent[] {
  const rng = seededRandom(opts.seed ?? 42);
  const from = opts.now - opts.days * 86_400_000;
  const to = opts.now - 60_000;
  const bursts = Math.ceil(opts.count / 20);
  const centers = Array.from({ length: bursts }, () => from + rng() * (to - from)).sort((a, b) => a - b);
  const out: NewEvent[] = [];
  let lastPersisted = 0;
  let i = 0;
  for (const c of centers) {
    for (let k = 0; k < 20 && out.length < opts.count; k++) {
      const persistedAt = Math.max(lastPersisted, Math.round(c + k * 50));
      const published = persistedAt - Math.floor(rng() * 30_000);
      if (opts.exclude?.some(([a, b]) => published >= a && published < b)) continue;
      lastPersisted = persistedAt;
      out.push({ event: opts.kind === 'log' ? logEvent(i) : legacyEvent(i), published, persistedAt });
      i++;
    }
  }
  return out;
}
