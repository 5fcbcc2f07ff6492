/**
 * A parsed filter (parse.ts) → a ClickHouse boolean expression over the
 * events table, with every value and every attribute name bound as a query
 * parameter (`{f3:String}`): nothing from a rule file is ever spliced into
 * SQL. The meaning is evaluate.ts's, so a hunt over ClickHouse finds exactly
 * the events the same filter matches on the stream:
 *
 * - an attribute is read from `raw` (the event as received) by walking its
 *   path with the case-insensitive JSONExtract functions, traversing lists
 *   (any element), numeric segments as positions, strings holding JSON as
 *   JSON — giving an Array(Nullable(String)) of the attribute's values;
 *   a few hot scalar paths read their typed column instead;
 * - comparisons are case-insensitive (lowerUTF8 on both sides).
 *
 * Known difference: keys match case-insensitively but, unlike the stream,
 * not with `_` ignored (`event_type` does not read `eventType` here).
 */
import {
  FilterSyntaxError,
  parseFilter,
  resolveFilterPath,
  type CompareOp,
  type FilterNode,
  type Literal,
} from './parse.js';

export interface CompiledSql {
  /** A boolean expression; `{name:Type}` placeholders only. */
  readonly where: string;
  readonly params: Record<string, string | number | string[]>;
}

/** Typed columns that hold exactly a scalar attribute's text (NULL when absent). */
const COLUMNS: Readonly<Record<string, string>> = {
  eventtype: 'event_type',
  displaymessage: 'display_message',
  legacyeventtype: 'legacy_event_type',
  severity: 'severity',
  uuid: 'uuid',
  'outcome.result': 'outcome_result',
  'outcome.reason': 'outcome_reason',
  'actor.id': 'actor_id',
  'actor.alternateid': 'actor_alternate_id',
  'actor.type': 'actor_type',
  'actor.displayname': 'actor_display_name',
};

/**
 * hooklog's enrichment (platform/enrichment/) is no part of `raw`: it is read from its columns (migration 037),
 * the only place it is stored, and an event's own key spelled `enrichment` is never read, as the rule engine
 * never reads it either (attachEnrichment). Keyed by the path's normal form (lower case, no `_`), as rules read it.
 */
const ENRICHMENT_COLUMNS: Readonly<Record<string, string>> = {
  'enrichment.geo.country': 'enrichment_country',
  'enrichment.geo.city': 'enrichment_city',
  'enrichment.geo.lat': 'enrichment_lat',
  'enrichment.geo.lon': 'enrichment_lon',
  'enrichment.asn.number': 'enrichment_as_number',
  'enrichment.asn.organization': 'enrichment_as_org',
};

const ISO_RE = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d/;

/**
 * Binds as it compiles: `node` a filter, `values` an attribute's values (search's columns and facets read
 * fields the way the filter does, so a facet value clicked into `eq` matches the events it counted).
 * Parameter names are `f<n>`; callers name theirs otherwise.
 */
export class FilterSqlBuilder {
  readonly params: Record<string, string | number | string[]> = {};
  #n = 0;

  bind(v: string | number | string[], type: string): string {
    const name = `f${this.#n++}`;
    this.params[name] = v;
    return `{${name}:${type}}`;
  }

  /**
   * Array(Nullable(String)): every value of the attribute at `path`. With `scalars`, an object or list value
   * is NULL: evaluate.ts orders only scalars (`outcome gt "m"` is false on an object), while an object's JSON
   * text would compare as text.
   */
  values(path: string, scalars = false): string {
    const resolved = resolveFilterPath(path);
    const col = COLUMNS[resolved.toLowerCase()];
    if (col) return `[nullIf(toString(${col}), '')]`;
    const normal = resolved.toLowerCase().replaceAll('_', '');
    if (normal === 'enrichment' || normal.startsWith('enrichment.')) {
      const enriched = ENRICHMENT_COLUMNS[normal];
      if (!enriched)
        throw new FilterSyntaxError(
          `${JSON.stringify(path.slice(0, 80))}: searches read the enrichment's fields one by one: ${Object.keys(ENRICHMENT_COLUMNS).join(', ')}`,
          0,
        );
      return `[nullIf(toString(${enriched}), '')]`;
    }
    // JSON texts reached so far; arrays are opened (and JSON strings read) before each step.
    // ClickHouse evaluates both branches of an `if` inside a lambda, so each parser gets a trivial text ('""',
    // '[]') when its branch is not taken: parsing every event's whole `raw` for nothing cost 3.5x the useful
    // extraction (a `client.ipAddress` facet over 22,000 events, bench/search).
    let list = '[raw]';
    const str = (j: string) =>
      `if(startsWith(${j}, '"'), JSONExtractString(if(startsWith(${j}, '"'), ${j}, '""')), ${j})`;
    const arr = (j: string) =>
      `if(startsWith(${j}, '['), JSONExtractArrayRaw(if(startsWith(${j}, '['), ${j}, '[]')), [${j}])`;
    const open = (l: string) => `arrayFlatten(arrayMap(s -> ${arr('s')}, arrayMap(j -> ${str('j')}, ${l})))`;
    for (const seg of resolved.split('.')) {
      if (/^\d+$/.test(seg)) {
        // A position: JSONExtract counts from 1. The list must not be opened first.
        const idx = this.bind(Number(seg) + 1, 'Int64');
        list = `arrayMap(j -> JSONExtractRawCaseInsensitive(${str('j')}, ${idx}), ${list})`;
      } else {
        const key = this.bind(seg, 'String');
        list = `arrayMap(j -> JSONExtractRawCaseInsensitive(j, ${key}), ${open(list)})`;
      }
    }
    // Leaves: a list leaf is its elements; JSON text → the value's text, absent or null → NULL.
    const leaves = `arrayFlatten(arrayMap(j -> ${arr('j')}, ${list}))`;
    const empty = scalars ? `j = '' OR j = 'null' OR startsWith(j, '{') OR startsWith(j, '[')` : `j = '' OR j = 'null'`;
    return `arrayMap(j -> if(${empty}, NULL, ${str('j')}), ${leaves})`;
  }

  test(cmp: CompareOp, lit: Exclude<Literal, null>): string {
    const text = typeof lit === 'string' ? lit : String(lit);
    if (cmp === 'gt' || cmp === 'ge' || cmp === 'lt' || cmp === 'le') {
      const sym = { gt: '>', ge: '>=', lt: '<', le: '<=' }[cmp];
      if (typeof lit === 'number') return `toFloat64OrNull(x) ${sym} ${this.bind(lit, 'Float64')}`;
      const p = this.bind(text.toLowerCase(), 'String');
      if (ISO_RE.test(text)) {
        const t = this.bind(text, 'String');
        return (
          `if(match(x, '^\\\\d{4}-\\\\d\\\\d-\\\\d\\\\d[T ]\\\\d\\\\d:\\\\d\\\\d') AND parseDateTime64BestEffortOrNull(x, 3) IS NOT NULL, ` +
          `parseDateTime64BestEffortOrNull(x, 3) ${sym} parseDateTime64BestEffort(${t}, 3), lowerUTF8(x) ${sym} ${p})`
        );
      }
      return `lowerUTF8(x) ${sym} ${p}`;
    }
    const p = this.bind(text.toLowerCase(), 'String');
    switch (cmp) {
      case 'eq':
      case 'ne':
        return `lowerUTF8(x) = ${p}`;
      case 'co':
        return `position(lowerUTF8(x), ${p}) > 0`;
      case 'sw':
        return `startsWith(lowerUTF8(x), ${p})`;
      case 'ew':
        return `endsWith(lowerUTF8(x), ${p})`;
    }
  }

  node(n: FilterNode): string {
    switch (n.op) {
      case 'and':
      case 'or':
        return `(${n.items.map((i) => this.node(i)).join(` ${n.op.toUpperCase()} `)})`;
      case 'not':
        return `(NOT ${this.node(n.item)})`;
      case 'pr':
        return `arrayExists(x -> x IS NOT NULL AND x NOT IN ('', '{}'), ${this.values(n.path)})`;
      case 'in': {
        const vals = n.values.filter((v) => v !== null).map((v) => String(v).toLowerCase());
        const hasNull = n.values.includes(null);
        const vs = this.values(n.path);
        const some = `arrayExists(x -> x IS NOT NULL AND lowerUTF8(x) IN ${this.bind(vals, 'Array(String)')}, ${vs})`;
        return hasNull ? `(${some} OR NOT arrayExists(x -> x IS NOT NULL, ${vs}))` : some;
      }
      case 'inlist':
        // The lists live in the processes that load them (platform/iplists/), not in ClickHouse yet.
        throw new FilterSyntaxError(
          `in list(${JSON.stringify(n.list)}) is for rules; searches cannot test IP lists yet`,
          n.at,
        );
      case 'cmp': {
        const ordered = n.cmp === 'gt' || n.cmp === 'ge' || n.cmp === 'lt' || n.cmp === 'le';
        const vs = this.values(n.path, ordered);
        if (n.value === null) {
          const present = `arrayExists(x -> x IS NOT NULL, ${vs})`;
          return n.cmp === 'eq' ? `(NOT ${present})` : n.cmp === 'ne' ? present : '0';
        }
        const some = `arrayExists(x -> x IS NOT NULL AND ${this.test(n.cmp, n.value)}, ${vs})`;
        return n.cmp === 'ne' ? `(NOT ${some})` : some;
      }
    }
  }
}

/** Compiles a parsed filter to a parameterised boolean expression over the events table. */
export function filterToSql(node: FilterNode): CompiledSql {
  const b = new FilterSqlBuilder();
  const where = b.node(node);
  return { where, params: b.params };
}

/** Parses and compiles a filter expression. */
export function compileFilterSql(src: string): CompiledSql {
  return filterToSql(parseFilter(src));
}
