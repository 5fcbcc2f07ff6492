/**
 * Events for the simulated org: shapes from the shared corpus (real LogEvents
 * and legacy events), each copy with a fresh id and its own times. History
 * comes in bursts, with `published` up to 30 s before persistence, so inside
 * a burst the persistence order (the paging order) is not the published order.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CORPORA_DIR } from '../support/corpus.js';
import { seededRandom } from '../support/random.js';
import type { NewEvent } from './store.js';

type Json = Record<string, unknown>;

const BUILTIN_LOG: Json = {
  actor: { id: '00uttidj01jqL21aM1d6', type: 'User', alternateId: 'john.doe@example.com', displayName: 'John Doe', detailEntry: null },
  client: { userAgent: { rawUserAgent: 'Mozilla/5.0', os: 'Mac OS X', browser: 'CHROME' }, zone: null, device: 'Computer', id: null, ipAddress: '10.0.0.1',
    geographicalContext: { city: 'New York', state: 'New York', country: 'United States', postalCode: '10013', geolocation: { lat: 40.3157, lon: -74.01 } } },
  authenticationContext: { externalSessionId: 'idxBager62CSveUkTxvgRtonA', rootSessionId: 'idxBager62CSveUkTxvgRtonA' },
  displayMessage: 'User login to Okta', eventType: 'user.session.start', outcome: { result: 'SUCCESS', reason: null },
  severity: 'INFO', legacyEventType: 'core.user_auth.login_success', transaction: { type: 'WEB', id: 'ab609228fe84ce59cdcbfa690bgce016', detail: null },
  version: '0', target: [{ id: '0oatxlef9sQvvqInq5d6', type: 'AppInstance', alternateId: 'Okta Admin Console', displayName: 'Okta Admin Console', detailEntry: null }],
};

const BUILTIN_LEGACY: Json = {
  action: { message: 'Sign-in successful', categories: ['Sign-in Success'], objectType: 'core.user_auth.login_success', requestUri: '/login/do-login' },
  actors: [{ id: '00ubgaSARVOQDIOXMORI', displayName: 'Samus Aran', login: 'samus.aran@example.com', objectType: 'User' },
    { id: 'Mozilla/5.0', displayName: 'CHROME', ipAddress: '10.10.10.10', objectType: 'Client' }],
  targets: [{ id: '00ubgaSARVOQDIOXMORI', displayName: 'Samus Aran', login: 'samus.aran@example.com', objectType: 'User' }],
};

function readJsonl(file: string): Json[] {
  const path = join(CORPORA_DIR, file);
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Json);
}

let logTemplates: Json[] | undefined;
let legacyTemplates: Json[] | undefined;

/** LogEvent shapes: the corpus's valid events when present (tests), else one built-in (demo without the corpus). */
export function logEventTemplates(): Json[] {
  logTemplates ??= readJsonl('logevents.valid.jsonl');
  return logTemplates.length > 0 ? logTemplates : [BUILTIN_LOG];
}

export function legacyEventTemplates(): Json[] {
  legacyTemplates ??= readJsonl('legacy_events.jsonl');
  return legacyTemplates.length > 0 ? legacyTemplates : [BUILTIN_LEGACY];
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
