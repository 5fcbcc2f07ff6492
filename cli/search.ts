/**
 * `hooklog search '<filter>' --org … --since …`: the search engine
 * (analytics/search/) from the terminal. The filter is checked here first, so
 * a mistake is pointed at before anything is opened; then, while a hooklog
 * runs on embedded ClickHouse, the search goes through its admin socket (as
 * `sql` and `query` do), else this process opens the store.
 *
 * `--saved <name>` runs an org's saved search (the console's, console/saved-searches.ts: its filter, range,
 * columns and facets; a relative range counts back from now), `--list-saved` lists them.
 *
 * The terminal is the local operator's, who holds the data directory: it reads
 * every org, `--org '*'` included. Values are attacker-chosen: the table draws
 * control and invisible characters visibly (an escape sequence in an event
 * must not drive the terminal), CSV is formula-safe (console/csv.ts).
 */
import type { Principal } from '../platform/access.js';
import { parseInstant } from '../consumers/alerting/commands.js';
import { HooklogError } from '../platform/errors.js';
import { withConfiguredStore } from '../platform/store/index.js';
import { compileSearch, search, SearchError, type SearchPage, type SearchRequest } from '../analytics/search/search.js';
import { toCsv } from '../console/csv.js';
import { lastMs, lastWords } from '../console/saved-range.js';
import { listSaved, type SavedSearch } from '../console/saved-searches.js';
import { text, visible } from '../console/display.js';
import { viaAdminSocket, type AdminRoutes } from './admin-socket.js';
import type { Config } from './config/schema.js';
import { render, type OutputFormat } from './format.js';
import type { Store } from '../platform/store/index.js';

const SEARCH = '/search';
const SAVED = '/saved-searches';

/** Whoever runs the command on this machine: every org (they hold the data directory and its store). */
const LOCAL_OPERATOR: Principal = { kind: 'key', id: 'local-cli', name: 'hooklog CLI', orgs: 'all', role: 'viewer' };

export interface SearchFlags {
  readonly org: string;
  /** Required unless a saved search gives the range. */
  readonly since?: string;
  readonly until?: string;
  readonly fields?: string;
  readonly facets?: string;
  readonly limit?: string;
  readonly after?: string;
  readonly histogram?: boolean;
}

const list = (s: string | undefined) =>
  s === undefined
    ? undefined
    : s
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');

/** The request the flags ask for; throws a SearchError (or QUERY_INVALID) naming the flag. */
export function searchRequest(filter: string, flags: SearchFlags, now = Date.now()): SearchRequest {
  if (flags.since === undefined) throw new HooklogError('QUERY_INVALID', '--since is required (or --saved <name>)');
  const since = parseInstant(flags.since, 'since', now);
  const until = flags.until ? parseInstant(flags.until, 'until', now) : now;
  if (since >= until) throw new HooklogError('QUERY_INVALID', '--until must be after --since');
  const limit = flags.limit === undefined ? undefined : Number(flags.limit);
  const fields = list(flags.fields);
  const facets = list(flags.facets);
  return {
    filter,
    org: flags.org,
    since,
    until,
    ...(fields ? { fields } : {}),
    ...(facets ? { facets } : {}),
    ...(limit !== undefined ? { limit } : {}),
    ...(flags.after ? { after: flags.after } : {}),
    ...(flags.histogram ? { histogram: true } : {}),
  };
}

/**
 * The request for a saved search: its filter, its range (a relative one back from `now`, unless --since or
 * --until say otherwise), its columns and facets (unless the flags name some), the flags' limit, cursor, histogram.
 */
export function savedSearchRequest(saved: SavedSearch, flags: SearchFlags, now = Date.now()): SearchRequest {
  const r = saved.range;
  const since = 'last' in r ? new Date(now - (lastMs(r.last) ?? 86_400_000)).toISOString() : r.since;
  return searchRequest(
    saved.filter,
    {
      ...flags,
      since: flags.since ?? since,
      ...(flags.until === undefined && 'until' in r ? { until: r.until } : {}),
      ...(flags.fields === undefined && saved.fields.length > 0 ? { fields: saved.fields.join(',') } : {}),
      ...(flags.facets === undefined && saved.facets.length > 0 ? { facets: saved.facets.join(',') } : {}),
    },
    now,
  );
}

/** The saved searches of `org` (`*`: every org), from the store or through a running hooklog. */
export async function listSavedSearches(config: Config, org: string): Promise<SavedSearch[]> {
  if (!config.store.clickhouse) {
    const viaRunning = await viaAdminSocket<SavedSearch[]>(config.data_dir, SAVED, { org });
    if (viaRunning) return viaRunning;
  }
  return withConfiguredStore(config, (store) => savedOf(store, org));
}

const savedOf = (store: Store, org: string) =>
  listSaved(store, org === '*' ? { all: true, orgs: [] } : { all: false, orgs: [org] });

/** The org's saved search of this name; QUERY_INVALID (on --saved) naming what the org has when none is. */
export async function findSavedSearch(config: Config, org: string, name: string): Promise<SavedSearch> {
  const all = await listSavedSearches(config, org);
  const found = all.find((s) => s.name === name);
  if (found) return found;
  const names = all.map((s) => JSON.stringify(visible(s.name.slice(0, 60)))).slice(0, 10);
  throw new HooklogError(
    'QUERY_INVALID',
    `no saved search ${JSON.stringify(visible(name.slice(0, 100)))} in org ${JSON.stringify(visible(org.slice(0, 100)))}` +
      (names.length > 0 ? ` (it has ${names.join(', ')})` : ' (it has none)'),
  );
}

/** The saved searches as the format says; names and filters are others' text, drawn visibly and bounded. */
export function renderSavedList(list: readonly SavedSearch[], format: OutputFormat): string {
  if (format === 'json') return JSON.stringify(list, null, 2) + '\n';
  const columns = ['org', 'name', 'filter', 'range', 'fields', 'facets', 'saved_by', 'saved_at', 'id'];
  const rows = list.map((s) => ({
    org: s.org,
    name: s.name,
    filter: s.filter,
    range: 'last' in s.range ? lastWords(s.range.last) : `${s.range.since} to ${s.range.until}`,
    fields: s.fields.join(','),
    facets: s.facets.join(','),
    saved_by: s.saved_by_name,
    saved_at: s.saved_at,
    id: s.id,
  }));
  if (format === 'csv') return toCsv(columns, rows);
  const bounded = (v: unknown) => {
    const t = visible(text(v));
    return t.length > 120 ? `${t.slice(0, 120)}…` : t;
  };
  return render(
    { columns, rows: rows.map((r) => Object.fromEntries(columns.map((c) => [c, bounded(r[c as keyof typeof r])]))) },
    'table',
  );
}

/** The running process's side of the admin socket. */
export function searchAdminRoutes(store: Store): AdminRoutes {
  return {
    [SEARCH]: (body) => search(store, LOCAL_OPERATOR, body as SearchRequest),
    [SAVED]: (body) => savedOf(store, String((body as { org?: unknown }).org ?? '')),
  };
}

/** Runs the search: through a running hooklog on embedded ClickHouse, else on a store of its own. */
export async function runSearch(config: Config, req: SearchRequest): Promise<SearchPage> {
  compileSearch(LOCAL_OPERATOR, req); // a mistake fails here, before any store or socket
  if (!config.store.clickhouse) {
    const viaRunning = await viaAdminSocket<SearchPage>(config.data_dir, SEARCH, req);
    if (viaRunning) return viaRunning;
  }
  return withConfiguredStore(config, (store) => search(store, LOCAL_OPERATOR, req));
}

/** A filter mistake with a caret under its column, for the terminal. */
export function pointAt(filter: string, err: unknown): string | undefined {
  if (!(err instanceof SearchError) || err.column === undefined || filter.length > 300 || /[\r\n]/.test(filter))
    return undefined;
  return `  ${visible(filter)}\n  ${' '.repeat(visible(filter.slice(0, err.column - 1)).length)}^\n`;
}

/** The page as the format says: JSON is the whole page; table and CSV the events, then each facet. */
export function renderSearch(page: SearchPage, format: OutputFormat): string {
  if (format === 'json') return JSON.stringify(page, null, 2) + '\n';
  const sections: Array<{ columns: readonly string[]; rows: ReadonlyArray<Record<string, unknown>> }> = [
    { columns: page.columns, rows: page.rows },
    ...(page.histogram
      ? [{ columns: ['bucket', 'events'], rows: page.histogram.buckets.map((b) => ({ bucket: b.t, events: b.n })) }]
      : []),
    ...(page.facets ?? []).map((f) => ({
      columns: [f.field, 'events'],
      rows: f.values.map((v) => ({ [f.field]: v.value, events: v.n })),
    })),
  ];
  if (format === 'csv') return sections.map((s) => toCsv(s.columns, s.rows)).join('\r\n');
  return sections
    .map((s) =>
      render(
        {
          columns: s.columns,
          rows: s.rows.map((r) => Object.fromEntries(s.columns.map((c) => [c, visible(text(r[c]))]))),
        },
        'table',
      ),
    )
    .join('\n');
}
