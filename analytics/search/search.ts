/**
 * The search engine behind `hooklog search` (and the console's Search page):
 * a filter in the rules' language (platform/filter/parse.ts, the language
 * `match` rules use, so a filter means here what it means to a rule) over one
 * org's events in [since, until), compiled to ClickHouse SQL in which every
 * value, attribute name, org, time and cursor is a bound `{name:Type}`
 * parameter. It answers a page of events newest first (keyset pagination: the
 * cursor is the last row's (published, uuid, event_type), so a page never
 * shifts as new events land), a histogram over the range, and the top values
 * of chosen fields (facets).
 *
 * Who may read what is platform/access.ts's decision: one org the principal
 * may see, or `*` (every org) only for a principal that sees every org.
 * Anything else is "not found", as if the org did not exist.
 */
import { EVERY_ORG, mayReadOrgs, type Principal } from '../../platform/access.js';
import { HooklogError } from '../../platform/errors.js';
import { FILTER_ALIASES, FilterSyntaxError, parseFilter, type FilterNode } from '../../platform/filter/parse.js';
import { ACTOR_CONTEXT_PATHS, lookupFieldPath } from '../../schemas/logevent-fields.js';
import { FilterSqlBuilder } from '../../platform/filter/sql.js';
import type { Store } from '../../platform/store/index.js';
import { classifyClickHouseError } from '../../platform/store/errors.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

/** Bounds on what one request may ask for: each is far above what a page shows and keeps one request cheap. */
export const SEARCH_LIMITS = {
  filterChars: 4096,
  fields: 20,
  facets: 10,
  pageSize: 1000,
  facetValues: 100,
  histogramBuckets: 120,
} as const;

/** The columns a search shows when none are chosen. */
export const DEFAULT_FIELDS: readonly string[] = [
  'eventType',
  'actor.alternateId',
  'client.ipAddress',
  'outcome.result',
  'displayMessage',
];

export interface SearchRequest {
  /** The filter; blank means every event. */
  readonly filter: string;
  /** One org, or `*` for every org (only for principals that see every org). */
  readonly org: string;
  /** [since, until) in epoch ms. */
  readonly since: number;
  readonly until: number;
  /** Columns: attribute paths as a filter writes them (default DEFAULT_FIELDS). */
  readonly fields?: readonly string[];
  /** Events per page (default 100). */
  readonly limit?: number;
  /** The `next` of the previous page. */
  readonly after?: string;
  /** Fields whose top values to count over every matching event. */
  readonly facets?: readonly string[];
  /** Values per facet (default 10). */
  readonly facetLimit?: number;
  /** Count matching events per time bucket. */
  readonly histogram?: boolean;
  /** Each event's JSON as received, in the `raw` column. */
  readonly raw?: boolean;
}

export interface SearchPage {
  /** published, uuid (org first when `*`), then the chosen fields as named, then raw when asked. */
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<Record<string, unknown>>;
  /** The cursor of the next page, when there is one. */
  readonly next?: string;
  readonly histogram?: { readonly bucketSeconds: number; readonly buckets: ReadonlyArray<{ t: string; n: number }> };
  readonly facets?: ReadonlyArray<{
    readonly field: string;
    readonly values: ReadonlyArray<{ value: string; n: number }>;
  }>;
}

/**
 * A search that cannot run as asked: `param` names what is wrong (filter, fields, facets, org, after, …);
 * for the filter, `column` (1-based) is where. `notFound`: an org the principal may not read, which a route
 * answers exactly as an org that does not exist.
 */
export class SearchError extends HooklogError {
  readonly param: string;
  readonly column: number | undefined;
  readonly notFound: boolean;
  constructor(param: string, message: string, opts: { column?: number; notFound?: boolean } = {}) {
    super('QUERY_INVALID', message);
    this.name = 'SearchError';
    this.param = param;
    this.column = opts.column;
    this.notFound = opts.notFound ?? false;
  }
}

/** One query to run: SQL with `{db}` for the database, and its parameters. */
export interface BoundQuery {
  readonly sql: string;
  readonly params: Record<string, string | number | string[]>;
}

/** What a request compiles to: every query it runs, before any is run (tests read the SQL). */
export interface CompiledSearch {
  readonly events: BoundQuery;
  readonly histogram?: BoundQuery & { readonly bucketSeconds: number };
  readonly facets: ReadonlyArray<BoundQuery & { readonly field: string }>;
  readonly fields: readonly string[];
}

const PATH = /^[A-Za-z_$][A-Za-z0-9_$:-]*(\.[A-Za-z0-9_$:-]+)*$/;

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** The name among `names` that `seg` most likely meant, when one is close. */
function nearest(seg: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const name of names) {
    const d = distance(seg.toLowerCase(), name.toLowerCase());
    if (d < bestD) [best, bestD] = [name, d];
  }
  return bestD <= Math.max(2, Math.floor(seg.length / 3)) ? best : undefined;
}

/**
 * Refuses a path that reads nothing on a LogEvent (schemas/logevent-fields.ts): a first segment that is no
 * LogEvent field, or a field a documented object never has (`outcome.reslt`), suggesting the field it most
 * likely meant. Under an object the service extends (`securityContext.x`) or a free-form map
 * (`debugContext.debugData.x`) any name is taken. Names compare case-insensitively, as the SQL reads them
 * (not `_`-insensitively: `event_type` reads nothing in ClickHouse, so it is refused too).
 */
function checkPath(path: string, param: string, column?: number): void {
  const where = column === undefined ? '' : `, column ${column}`;
  const shown = JSON.stringify(path.slice(0, 200));
  if (!PATH.test(path)) throw new SearchError(param, `${param}${where}: ${shown} is not a field path`, { column });
  if (FILTER_ALIASES[path.toLowerCase()]) return;
  const context = ACTOR_CONTEXT_PATHS.find((p) => p.toLowerCase() === path.toLowerCase());
  if (context)
    // Rules read it because alerting adds it to each event as it evaluates; the events stored never had it, so
    // the SQL would match nothing. Joining the identity records' table is not built: refused, never empty.
    throw new SearchError(
      param,
      `${param}${where}: ${JSON.stringify(context)} is identity context that alerting gives events as its rules run (docs/detect/rules.md#identity-context); stored events do not carry it and search cannot join the identity records yet: search by actor.id or actor.alternateId`,
      { column },
    );
  const segs = path.split('.');
  const v = lookupFieldPath(segs.map((s) => s.toLowerCase()));
  if (v.known || (!v.never && v.at > 0)) return;
  const near = nearest(segs[v.at]!, v.siblings);
  const fix = near ? `: did you mean "${[...v.prefix, near, ...segs.slice(v.at + 1)].join('.')}"?` : '';
  throw new SearchError(param, `${param}${where}: unknown field ${shown}${fix}`, { column });
}

function checkPaths(paths: readonly string[] | undefined, param: string, most: number): void {
  if (!paths) return;
  if (paths.length > most) throw new SearchError(param, `${param}: at most ${most}`);
  for (const p of paths) checkPath(p, param);
}

/** The filter's tree (undefined: every event); a mistake is a SearchError with its column. */
export function parseSearchFilter(filter: string): FilterNode | undefined {
  if (filter.length > SEARCH_LIMITS.filterChars)
    throw new SearchError('filter', `filter: at most ${SEARCH_LIMITS.filterChars} characters`);
  if (filter.trim() === '') return undefined;
  let tree: FilterNode;
  try {
    tree = parseFilter(filter);
  } catch (err) {
    if (!(err instanceof FilterSyntaxError)) throw err;
    const column = err.offset + 1;
    throw new SearchError('filter', `filter, column ${column}: ${err.message.replace(/ at \d+$/, '')}`, { column });
  }
  // Each leaf's path, checked at its own column (the first leaf reading it).
  const leaves: Array<{ path: string; at: number }> = [];
  const visit = (n: FilterNode): void => {
    switch (n.op) {
      case 'and':
      case 'or':
        n.items.forEach(visit);
        return;
      case 'not':
        visit(n.item);
        return;
      default:
        leaves.push({ path: n.path, at: n.at });
    }
  };
  visit(tree);
  for (const l of leaves) checkPath(l.path, 'filter', l.at + 1);
  return tree;
}

/** ClickHouse DateTime64(3) text of an instant. */
function chTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

const CH_TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,3})?$/;

/** The cursor after `row`: opaque to callers (base64url JSON of the sort key). */
function cursorAfter(row: { ts: string; uuid: string; et: string }): string {
  return Buffer.from(JSON.stringify([row.ts, row.uuid, row.et])).toString('base64url');
}

function readCursor(after: string): [string, string, string] {
  const bad = () => new SearchError('after', 'after: not a cursor this search gave');
  if (after.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(after)) throw bad();
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === 'string') || !CH_TIME.test(v[0] as string))
    throw bad();
  return v as [string, string, string];
}

const STEPS = [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400, 7 * 86_400];

/** The histogram's bucket: the smallest step that keeps the range within SEARCH_LIMITS.histogramBuckets. */
export function bucketSeconds(since: number, until: number): number {
  const span = (until - since) / 1000;
  const fits = STEPS.find((s) => span / s <= SEARCH_LIMITS.histogramBuckets);
  return fits ?? Math.ceil(span / SEARCH_LIMITS.histogramBuckets / 86_400) * 86_400;
}

function whole(v: number | undefined, name: string, min: number, max: number, fallback: number): number {
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < min || v > max)
    throw new SearchError(name, `${name}: a whole number from ${min} to ${max}`);
  return v;
}

/**
 * Checks `req` against what `principal` may read and compiles every query it runs. Nothing is run: a
 * mistake is found before the store is touched.
 */
export function compileSearch(principal: Principal, req: SearchRequest): CompiledSearch {
  if (typeof req.org !== 'string' || req.org === '' || req.org.length > 200)
    throw new SearchError('org', 'org: give one org, or * for every org');
  if (!mayReadOrgs(principal, req.org)) throw new SearchError('org', 'not found', { notFound: true });
  if (!Number.isFinite(req.since) || !Number.isFinite(req.until) || req.since >= req.until)
    throw new SearchError('until', 'until must be after since');
  const tree = parseSearchFilter(req.filter);
  const fields = req.fields && req.fields.length > 0 ? req.fields : DEFAULT_FIELDS;
  checkPaths(fields, 'fields', SEARCH_LIMITS.fields);
  checkPaths(req.facets, 'facets', SEARCH_LIMITS.facets);
  const limit = whole(req.limit, 'limit', 1, SEARCH_LIMITS.pageSize, 100);
  const facetLimit = whole(req.facetLimit, 'facet_limit', 1, SEARCH_LIMITS.facetValues, 10);
  const all = req.org === EVERY_ORG;

  /**
   * Each query binds its own: the scope (org and range) and the filter. The scope is on sorting-key columns
   * only, so it is PREWHERE, applied before FINAL folds an event's copies: they share the whole key and are
   * kept or skipped together, and the other columns (`raw` above all) are read only for the scope's rows.
   * The filter stays WHERE, on the folded values: on any other column a PREWHERE could skip the copy that
   * carries a value (analytics/README.md).
   */
  const scoped = () => {
    const b = new FilterSqlBuilder();
    const params: Record<string, string | number | string[]> = {
      since: chTime(req.since),
      until: chTime(req.until),
    };
    const conds = [`published >= {since:DateTime64(3, 'UTC')}`, `published < {until:DateTime64(3, 'UTC')}`];
    if (!all) {
      params.org = req.org;
      conds.unshift('org = {org:String}');
    }
    return { b, params, scope: conds.join(' AND '), filter: tree ? b.node(tree) : undefined };
  };
  const clauses = (scope: string, filter: string | undefined) =>
    `PREWHERE ${scope}${filter === undefined ? '' : `\nWHERE ${filter}`}`;
  const present = (b: FilterSqlBuilder, path: string) => `arrayFilter(x -> x IS NOT NULL, ${b.values(path)})`;
  const from = `{db}.${EVENTS_TABLE} FINAL`;

  // The first page in two steps: its events' keys by the sort alone (reading the filter's columns only), then
  // the shown columns for those events alone, which the sorting key finds (a granule or two), instead of
  // reading and sorting every matching event's `raw` to keep 50.
  const ev = scoped();
  let keyScope = ev.scope;
  if (req.after !== undefined) {
    const [p, u, t] = readCursor(req.after);
    Object.assign(ev.params, { after_published: p, after_uuid: u, after_type: t });
    keyScope += ` AND (published, uuid, event_type) < ({after_published:DateTime64(3, 'UTC')}, {after_uuid:String}, {after_type:String})`;
  }
  const cols = fields.map((f, i) => `${present(ev.b, f)} AS c${i}`);
  ev.params.limit = limit + 1;
  const order = 'ORDER BY published DESC, uuid DESC, event_type DESC\nLIMIT {limit:UInt32}';
  const events: BoundQuery = {
    sql: `SELECT ${all ? 'org, ' : ''}toString(published) AS ts, uuid, toString(event_type) AS et${cols.map((c) => `, ${c}`).join('')}${req.raw ? ', raw' : ''}
FROM ${from}
PREWHERE ${ev.scope} AND (org, event_type, published, uuid) IN (
SELECT org, event_type, published, uuid
FROM ${from}
${clauses(keyScope, ev.filter)}
${order})
${order}`,
    params: { ...ev.b.params, ...ev.params },
  };

  let histogram: CompiledSearch['histogram'];
  if (req.histogram) {
    const h = scoped();
    const step = bucketSeconds(req.since, req.until);
    h.params.bucket = step;
    histogram = {
      sql: `SELECT toString(toStartOfInterval(published, toIntervalSecond({bucket:UInt32}))) AS t, count() AS n
FROM ${from}
${clauses(h.scope, h.filter)}
GROUP BY t
ORDER BY t`,
      params: { ...h.b.params, ...h.params },
      bucketSeconds: step,
    };
  }

  const facets = (req.facets ?? []).map((field) => {
    const f = scoped();
    f.params.facet_limit = facetLimit;
    return {
      field,
      sql: `SELECT v AS value, count() AS n
FROM (SELECT arrayDistinct(${present(f.b, field)}) AS vs FROM ${from} ${clauses(f.scope, f.filter)})
ARRAY JOIN vs AS v
GROUP BY v
ORDER BY n DESC, v
LIMIT {facet_limit:UInt32}`,
      params: { ...f.b.params, ...f.params },
    };
  });
  return { events, ...(histogram ? { histogram } : {}), facets, fields };
}

async function run<T>(store: Store, q: BoundQuery): Promise<T[]> {
  try {
    const rs = await store.client.query({
      query: q.sql.replaceAll('{db}', store.database),
      query_params: q.params,
      format: 'JSONEachRow',
    });
    return await rs.json<T>();
  } catch (err) {
    throw classifyClickHouseError(err);
  }
}

/** A field's values as a cell: none → null, one → it, several → the list. */
function cell(values: ReadonlyArray<string | null>): unknown {
  return values.length === 0 ? null : values.length === 1 ? values[0] : values;
}

/** Runs a search for `principal` over `store`. */
export async function search(store: Store, principal: Principal, req: SearchRequest): Promise<SearchPage> {
  const c = compileSearch(principal, req);
  const limit = Number(c.events.params.limit) - 1;
  const [rows, hist, facets] = await Promise.all([
    run<Record<string, unknown>>(store, c.events),
    c.histogram ? run<{ t: string; n: string | number }>(store, c.histogram) : undefined,
    Promise.all(c.facets.map((f) => run<{ value: string; n: string | number }>(store, f))),
  ]);
  const page = rows.slice(0, limit);
  const last = page.at(-1) as { ts: string; uuid: string; et: string } | undefined;
  const all = req.org === EVERY_ORG;
  const columns = [...(all ? ['org'] : []), 'published', 'uuid', ...c.fields, ...(req.raw ? ['raw'] : [])];
  const out = page.map((r) => {
    const row: Record<string, unknown> = {};
    if (all) row.org = r.org;
    row.published = r.ts;
    row.uuid = r.uuid;
    c.fields.forEach((f, i) => (row[f] = cell(r[`c${i}`] as Array<string | null>)));
    if (req.raw) row.raw = r.raw;
    return row;
  });
  return {
    columns,
    rows: out,
    ...(rows.length > limit && last ? { next: cursorAfter(last) } : {}),
    ...(c.histogram && hist
      ? {
          histogram: {
            bucketSeconds: c.histogram.bucketSeconds,
            buckets: filled(req, c.histogram.bucketSeconds, hist),
          },
        }
      : {}),
    ...(req.facets
      ? {
          facets: c.facets.map((f, i) => ({
            field: f.field,
            values: facets[i]!.map((v) => ({ value: v.value, n: Number(v.n) })),
          })),
        }
      : {}),
  };
}

/** Every bucket of the range, empty ones as 0, so a chart's bars are evenly spaced. */
function filled(req: SearchRequest, step: number, got: ReadonlyArray<{ t: string; n: string | number }>) {
  const byT = new Map(got.map((b) => [Date.parse(`${b.t.replace(' ', 'T')}Z`), Number(b.n)]));
  const ms = step * 1000;
  const out: Array<{ t: string; n: number }> = [];
  for (let t = Math.floor(req.since / ms) * ms; t < req.until; t += ms)
    out.push({ t: new Date(t).toISOString(), n: byT.get(t) ?? 0 });
  return out;
}
