/**
 * Saved searches as records, the way alert triage is kept (alert-states.ts): every change an analyst makes to
 * an org's saved search (save, overwrite, rename, delete) is one record appended to `<prefix>.saved-searches`
 * and written by the sink into `{db}.saved_searches` (migration 034) through its `extraPipelines`. Nothing is
 * updated in place: a saved search is the latest of its records (`currentSql`), the same on every instance of a
 * fleet and after any restart, and the records are the audit trail (who, when, what, from which request).
 *
 * Each record carries the search's whole state, keyed by org and id, so the topic is compacted: its latest
 * record per key is the search as it stands (a delete included), while the table keeps every change.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { ExtraPipeline, MapResult } from '../platform/store/table-writer.js';
import type { ConsumedRecord, StreamRecord } from '../platform/stream/types.js';
import type { Store } from '../platform/store/index.js';
import { formatDateTime64, parseTimestamp } from '../platform/time.js';
import type { Principal } from '../platform/access.js';
import { lastMs } from './saved-range.js';
import { orgCondition, type Scope } from './scope.js';

/** The topic's name under a prefix. */
export function savedSearchesTopic(prefix: string): string {
  return `${prefix}.saved-searches`;
}

export const SAVED_ACTIONS = ['save', 'rename', 'delete'] as const;
export type SavedAction = (typeof SAVED_ACTIONS)[number];

/**
 * A name is the analyst's text (and so another analyst's to read: attacker-chosen); it is bounded here and
 * shown bounded and visible (display.ts). 10 KB names are kept: a page clips them, a list stays usable.
 */
export const MAX_NAME_CHARS = 16_384;
/** As the search engine's own limits (analytics/search: 4096 filter characters, 20 fields, 10 facets). */
const MAX_FILTER_CHARS = 4096;
const MAX_FIELDS = 20;
const MAX_FACETS = 10;
const MAX_FIELD_CHARS = 200;
const DAY_MS = 86_400_000;

const iso = z.string().refine((s) => parseTimestamp(s) !== null, 'must be an ISO-8601 timestamp');
const fieldList = (max: number) => z.array(z.string().min(1).max(MAX_FIELD_CHARS)).max(max);

/** The range: relative (`{ last: '7d' }`, re-read from now at each open) or absolute (`{ since, until }`). */
export const savedRangeSchema = z.union([
  z.strictObject({
    last: z.string().refine((s) => lastMs(s) !== undefined, 'a count and a unit (m, h, d) of at most 400 days'),
  }),
  z
    .strictObject({ since: iso, until: iso })
    .refine((r) => parseTimestamp(r.since)! < parseTimestamp(r.until)!, 'until must be after since')
    .refine((r) => parseTimestamp(r.until)! - parseTimestamp(r.since)! <= 400 * DAY_MS, 'at most 400 days'),
]);

/** What a save carries: the search's whole state (the Search page's URL without its org and page). */
export const savedStateSchema = z.strictObject({
  name: z
    .string()
    .max(MAX_NAME_CHARS)
    .refine((s) => s.trim() !== '', 'a name is required'),
  filter: z.string().max(MAX_FILTER_CHARS),
  range: savedRangeSchema,
  fields: fieldList(MAX_FIELDS),
  facets: fieldList(MAX_FACETS),
});
export type SavedState = z.output<typeof savedStateSchema>;

/** One change, as on the topic (public contract: fields never change meaning). */
export interface SavedSearchRecord extends SavedState {
  readonly change_id: string;
  readonly org: string;
  readonly search_id: string;
  /** ISO-8601 time the change was made. */
  readonly at: string;
  readonly action: SavedAction;
  /** Who: the principal's id (user subject or key name), its display name and kind. */
  readonly actor: string;
  readonly actor_name: string;
  readonly actor_kind: Principal['kind'];
  readonly request_id: string;
}

/** A saved search as it stands (the latest record of its id), as the API answers it. */
export interface SavedSearch extends SavedState {
  readonly org: string;
  readonly id: string;
  readonly saved_by: string;
  readonly saved_by_name: string;
  /** When the latest change was made (ClickHouse time text, UTC). */
  readonly saved_at: string;
  readonly created_at: string;
}

export function savedRecord(
  org: string,
  searchId: string,
  action: SavedAction,
  state: SavedState,
  who: Principal,
  requestId: string,
  now: number,
): SavedSearchRecord {
  return {
    change_id: randomUUID(),
    org,
    search_id: searchId,
    at: new Date(now).toISOString(),
    action,
    ...state,
    actor: who.id,
    actor_name: who.name,
    actor_kind: who.kind,
    request_id: requestId,
  };
}

/** Keyed by org and id, so compaction keeps each search's latest record; the org header as on every record. */
export function toStreamRecord(r: SavedSearchRecord): StreamRecord {
  return {
    key: `${r.org}/${r.search_id}`,
    value: Buffer.from(JSON.stringify(r)),
    headers: { 'hooklog-org': r.org },
  };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** A record → a `saved_searches` row; a record that is not a change is refused (dead-lettered by the sink). */
export function mapSavedSearchRecord(rec: ConsumedRecord): MapResult<object> {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(rec.value.toString('utf8')) as Record<string, unknown>;
  } catch {
    return { ok: false, reason: 'saved search record is not JSON' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return { ok: false, reason: 'saved search record is not an object' };
  const at = parseTimestamp(v.at);
  if (!str(v.change_id) || !str(v.search_id) || !str(v.org) || at === null)
    return { ok: false, reason: 'saved search record lacks change_id, search_id, org or at' };
  if (!SAVED_ACTIONS.includes(v.action as SavedAction))
    return { ok: false, reason: 'saved search record has an unknown action' };
  const state = savedStateSchema.safeParse({
    name: v.name,
    filter: v.filter,
    range: v.range,
    fields: v.fields,
    facets: v.facets,
  });
  if (!state.success)
    return { ok: false, reason: `saved search record is not a search: ${state.error.issues[0]?.message ?? ''}` };
  const range = state.data.range;
  return {
    ok: true,
    row: {
      at: formatDateTime64(at),
      org: v.org,
      search_id: v.search_id,
      change_id: v.change_id,
      action: v.action,
      name: state.data.name,
      filter: state.data.filter,
      range_last: 'last' in range ? range.last : '',
      // ISO-8601 as normalised here ('' for a relative range): what the page puts back in its URL.
      range_since: 'since' in range ? new Date(parseTimestamp(range.since)!).toISOString() : '',
      range_until: 'until' in range ? new Date(parseTimestamp(range.until)!).toISOString() : '',
      fields: state.data.fields,
      facets: state.data.facets,
      actor: str(v.actor),
      actor_name: str(v.actor_name),
      actor_kind: str(v.actor_kind),
      request_id: str(v.request_id),
    },
  };
}

/** The sink's pipeline for the topic (cli/ hands it to the sink when the console is on). */
export function savedSearchesPipeline(topic: string): ExtraPipeline {
  return { name: 'saved-searches', topic, table: 'saved_searches', map: mapSavedSearchRecord, onReject: 'deadletter' };
}

interface Row {
  org: string;
  search_id: string;
  action: string;
  name: string;
  filter: string;
  range_last: string;
  range_since: string;
  range_until: string;
  fields: string[];
  facets: string[];
  actor: string;
  actor_name: string;
  saved_at: string;
  created_at: string;
}

/**
 * The saved searches standing among those `where` selects (bound parameters), each the latest of its records
 * by `(at, change_id)` (so every instance picks the same one), a deleted one left out, by name.
 */
async function current(store: Store, where: string, params: Record<string, unknown>): Promise<SavedSearch[]> {
  const rows = await store.query<Row>(
    `SELECT org, search_id,
       argMax(action, (at, change_id)) AS action,
       argMax(name, (at, change_id)) AS name,
       argMax(filter, (at, change_id)) AS filter,
       argMax(range_last, (at, change_id)) AS range_last,
       argMax(range_since, (at, change_id)) AS range_since,
       argMax(range_until, (at, change_id)) AS range_until,
       argMax(fields, (at, change_id)) AS fields,
       argMax(facets, (at, change_id)) AS facets,
       argMax(actor, (at, change_id)) AS actor,
       argMax(actor_name, (at, change_id)) AS actor_name,
       toString(max(at)) AS saved_at,
       toString(min(at)) AS created_at
FROM ${store.database}.saved_searches FINAL
WHERE ${where}
GROUP BY org, search_id
HAVING action != 'delete'
ORDER BY name, org, search_id`,
    params,
  );
  return rows.map((r) => ({
    org: r.org,
    id: r.search_id,
    name: r.name,
    filter: r.filter,
    range: r.range_last !== '' ? { last: r.range_last } : { since: r.range_since, until: r.range_until },
    fields: r.fields,
    facets: r.facets,
    saved_by: r.actor,
    saved_by_name: r.actor_name,
    saved_at: r.saved_at,
    created_at: r.created_at,
  }));
}

/** The saved searches of the orgs in `scope`. */
export function listSaved(store: Store, scope: Scope): Promise<SavedSearch[]> {
  return current(store, orgCondition('org', scope), { orgs: [...scope.orgs] });
}

/** One saved search by id, of any org (the caller decides whether the principal may see it). */
export async function savedById(store: Store, id: string): Promise<SavedSearch | undefined> {
  return (await current(store, 'search_id = {id:String}', { id }))[0];
}

/** The org's standing saved search of this name, if any. */
export async function savedByName(store: Store, org: string, name: string): Promise<SavedSearch | undefined> {
  return (await current(store, 'org = {org:String}', { org })).find((s) => s.name === name);
}

/** Whether the sink has written every one of these changes. */
export async function savedChangesVisible(store: Store, changeIds: readonly string[]): Promise<boolean> {
  const rows = await store.query<{ n: string }>(
    `SELECT count() AS n FROM ${store.database}.saved_searches WHERE change_id IN {ids:Array(String)}`,
    { ids: [...changeIds] },
  );
  return Number(rows[0]?.n ?? 0) >= new Set(changeIds).size;
}

/** A saved search's changes, oldest first: the audit trail (who, when, what). */
export function savedHistory(store: Store, org: string, id: string): Promise<Array<Record<string, unknown>>> {
  return store.query(
    `SELECT toString(at) AS at, action, name, actor, actor_name, actor_kind, request_id, change_id
FROM ${store.database}.saved_searches FINAL
WHERE org = {org:String} AND search_id = {id:String}
ORDER BY at, change_id`,
    { org, id },
  );
}
