/**
 * The search engine (analytics/search/search.ts) on real chdb: it finds what
 * a match rule with the same filter fires on, binds every value, keeps each
 * org's events to who may read it, pages, counts and buckets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertChunk } from '../../bench/analytics/load.js';
import type { Principal } from '../../platform/access.js';
import type { Store } from '../../platform/store/index.js';
import { migratedStore } from '../testing.js';
import { HOSTILE, disagreements, engineView, generatedEvents, generatedFilters, prng } from './agreement.fixture.js';
import {
  compileSearch,
  search,
  SearchError,
  type BoundQuery,
  type CompiledSearch,
  type SearchRequest,
} from './search.js';

const ADMIN: Principal = { kind: 'key', id: 'admin', name: 'admin', orgs: 'all', role: 'viewer' };
const BASE = Date.parse('2026-03-02T10:00:00Z');
const RANGE = { since: BASE - 3_600_000, until: BASE + 8 * 3_600_000 };
const ACME_ONLY: Principal = { kind: 'user', id: 'a', name: 'a', orgs: ['acme'], role: 'analyst' };

function refusal(fn: () => unknown): SearchError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SearchError) return err;
    throw err;
  }
  throw new Error('not refused');
}

const allQueries = (c: CompiledSearch) => [c.events, ...(c.histogram ? [c.histogram] : []), ...c.facets];

describe('every value is a parameter', () => {
  // Hostile values carry a marker that no SQL the compiler writes contains.
  const MARK = 'Qz7';
  const PATHS = ['eventType', 'actor.alternateId', 'target.displayName', 'debugContext.debugData.risk', 'target.0.id'];
  const OPS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le'];
  /** A filter of the shape `seed` draws, with values from `value`. */
  function fuzzed(seed: number, value: () => string): string {
    const g = prng(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(g() * xs.length)]!;
    const leaf = (): string => {
      const c = g();
      const path = pick(PATHS);
      if (c < 0.15) return `${path} in [${JSON.stringify(value())}, ${JSON.stringify(value())}]`;
      if (c < 0.2) return `${path} pr`;
      return `${path} ${pick(OPS)} ${JSON.stringify(value())}`;
    };
    const tree = (d: number): string =>
      d === 0 || g() < 0.3 ? leaf() : `(${tree(d - 1)} ${pick(['and', 'or'])} not ${tree(d - 1)})`;
    return tree(3);
  }

  it("500 fuzzed filters: no value in the SQL, which depends on the filter's shape only", () => {
    const r = prng(37);
    const hostileValue = () =>
      `${MARK}${HOSTILE[Math.floor(r() * HOSTILE.length)]}${MARK}${HOSTILE[Math.floor(r() * HOSTILE.length)]}`;
    const req = (filter: string): SearchRequest => ({
      filter,
      org: `${MARK}${HOSTILE[Math.floor(r() * HOSTILE.length)]}`,
      ...RANGE,
      fields: ['actor.displayName', 'target.0.displayName'],
      facets: ['eventType', 'client.ipAddress'],
      histogram: true,
      after: Buffer.from(JSON.stringify(['2026-03-02 10:00:00.000', `${MARK}'--`, `${MARK}\\`])).toString('base64url'),
    });
    for (let i = 0; i < 500; i++) {
      const seed = Math.floor(r() * 1e9);
      const hostile = fuzzed(seed, hostileValue);
      const h = allQueries(compileSearch(ADMIN, req(hostile)));
      const p = allQueries(compileSearch(ADMIN, req(fuzzed(seed, () => 'plain'))));
      expect(
        h.map((q) => q.sql),
        hostile,
      ).toEqual(p.map((q) => q.sql));
      for (const q of h) {
        expect(q.sql, hostile).not.toMatch(new RegExp(MARK, 'i'));
        // Every placeholder is bound, and every bound value is used.
        const names = [...q.sql.matchAll(/\{(\w+):[^}]+\}/g)].map((m) => m[1]!);
        expect(new Set(names), hostile).toEqual(new Set(Object.keys(q.params)));
        expect(JSON.stringify(q.params)).toMatch(new RegExp(MARK, 'i'));
      }
    }
  });
});

describe('search agrees with the alerting engine', () => {
  let store: Store;
  const acme = generatedEvents(1, 300, 'acme', BASE);
  const other = generatedEvents(2, 100, 'other', BASE);
  beforeAll(async () => {
    store = await migratedStore('search');
    await insertChunk(store, [...acme, ...other]);
  });
  afterAll(async () => store?.close());

  it('on every operator, over generated events', async () => {
    const events = acme.map(engineView);
    const { filters, used } = generatedFilters(3, 300, events);
    // The enrichment's fields (columns, not raw) are among those filtered on, each of them.
    for (const f of ['geo.country', 'geo.city', 'geo.lat', 'geo.lon', 'asn.number', 'asn.organization'])
      expect([f, filters.some((x) => x.toLowerCase().includes(`enrichment.${f}`.toLowerCase()))]).toEqual([f, true]);
    const bad = await disagreements(store, ADMIN, 'acme', RANGE, events, filters);
    expect(bad.slice(0, 5)).toEqual([]);
    expect([...used.keys()].sort()).toEqual([
      'co',
      'eq',
      'eqnull',
      'ew',
      'ge',
      'gt',
      'in',
      'le',
      'lt',
      'ne',
      'nenull',
      'pr',
      'sw',
    ]);
  }, 120_000);

  it('hostile values run as data', async () => {
    for (const v of HOSTILE) {
      const page = await search(store, ADMIN, {
        filter: `actor.displayName eq ${JSON.stringify(v)}`,
        org: 'acme',
        ...RANGE,
        limit: 1000,
      });
      const want = acme.filter(
        (g) => (g.event.actor as { displayName: string }).displayName.toLowerCase() === v.toLowerCase(),
      );
      expect(page.rows.map((x) => String(x.uuid)).sort(), v).toEqual(want.map((g) => String(g.event.uuid)).sort());
    }
  });

  it('keeps org B out of org A: events, facets, histogram; * only for who sees every org', async () => {
    const broad = { filter: '', ...RANGE, limit: 1000, facets: ['eventType', 'actor.displayName'], histogram: true };
    const mine = await search(store, ACME_ONLY, { ...broad, org: 'acme' });
    expect(mine.rows).toHaveLength(acme.length);
    expect(mine.rows.every((x) => String(x.uuid).startsWith('acme-'))).toBe(true);
    const counts = new Map<string, number>();
    for (const g of acme) counts.set(String(g.event.eventType), (counts.get(String(g.event.eventType)) ?? 0) + 1);
    expect(mine.facets![0]!.values.map((v) => [v.value, v.n]).sort()).toEqual([...counts].sort());
    expect(mine.histogram!.buckets.reduce((n, b) => n + b.n, 0)).toBe(acme.length);
    for (const org of ['other', '*']) {
      const err = refusal(() => compileSearch(ACME_ONLY, { ...broad, org }));
      expect([err.notFound, err.message]).toEqual([true, 'not found']);
    }
    // Scoped to an org literally named "*" is still not every org.
    const star: Principal = { ...ACME_ONLY, orgs: ['*'] };
    expect(refusal(() => compileSearch(star, { ...broad, org: '*' })).notFound).toBe(true);
    const every = await search(store, ADMIN, { ...broad, org: '*' });
    expect(every.columns[0]).toBe('org');
    expect(every.rows).toHaveLength(acme.length + other.length);
    expect(new Set(every.rows.map((x) => x.org))).toEqual(new Set(['acme', 'other']));
    expect(every.facets![0]!.values.reduce((n, v) => n + v.n, 0)).toBe(acme.length + other.length);
  });

  it('pages newest first without a gap or a repeat, and buckets the range', async () => {
    const seen: string[] = [];
    const times: string[] = [];
    let after: string | undefined;
    do {
      const page = await search(store, ADMIN, {
        filter: 'eventType ne "policy.rule.update"',
        org: 'acme',
        ...RANGE,
        limit: 17,
        ...(after ? { after } : {}),
      });
      for (const x of page.rows) {
        seen.push(String(x.uuid));
        times.push(String(x.published));
      }
      after = page.next;
    } while (after);
    const want = acme.filter((g) => g.event.eventType !== 'policy.rule.update');
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual(want.map((g) => String(g.event.uuid)).sort());
    expect(times).toEqual([...times].sort().reverse());
    const h = await search(store, ADMIN, { filter: '', org: 'acme', ...RANGE, limit: 1, histogram: true });
    // 9 hours: 5-minute buckets (108), each event in the bucket of its time.
    expect(h.histogram!.bucketSeconds).toBe(300);
    expect(h.histogram!.buckets).toHaveLength(108);
    const at = (t: string) => Math.floor(Date.parse(t) / 300_000) * 300_000;
    const per = new Map<number, number>();
    for (const g of acme) per.set(at(String(g.event.published)), (per.get(at(String(g.event.published))) ?? 0) + 1);
    for (const b of h.histogram!.buckets) expect(b.n, b.t).toBe(per.get(Date.parse(b.t)) ?? 0);
  });
});

describe('a mistake is pointed at', () => {
  const req = (filter: string, more: Partial<SearchRequest> = {}): SearchRequest => ({
    filter,
    org: 'acme',
    ...RANGE,
    ...more,
  });
  it.each([
    ['eventType eq', 13, 'filter, column 13: expected a value, got the end'],
    [
      'eventType eq "x" and actr.alternateId eq "a"',
      22,
      'filter, column 22: unknown field "actr.alternateId": did you mean "actor.alternateId"?',
    ],
    ['(eventType eq "x"', 18, 'filter, column 18: missing )'],
    ['eventType equals "x"', 11, 'filter, column 11: unknown operator "equals" (eq ne co sw ew gt ge lt le pr in)'],
    ['zzzzzz pr', 1, 'filter, column 1: unknown field "zzzzzz"'],
    [
      'eventType pr and outcome.reslt eq "x"',
      18,
      'filter, column 18: unknown field "outcome.reslt": did you mean "outcome.result"?',
    ],
    ['event_type eq "x"', 1, 'filter, column 1: unknown field "event_type": did you mean "eventType"?'],
  ])('%s', (filter, column, message) => {
    const err = refusal(() => compileSearch(ADMIN, req(filter)));
    expect([err.param, err.column, err.message, err.code]).toEqual(['filter', column, message, 'QUERY_INVALID']);
  });

  it('identity context, which rules read and stored events never carry, is refused, never an empty answer', () => {
    const why = (path: string) =>
      `${JSON.stringify(path)} is identity context that alerting gives events as its rules run (docs/detect/rules.md#identity-context); stored events do not carry it and search cannot join the identity records yet: search by actor.id or actor.alternateId`;
    const err = refusal(() => compileSearch(ADMIN, req('eventType pr and actor.adminRoles eq "SUPER_ADMIN"')));
    expect([err.param, err.column, err.message, err.code]).toEqual([
      'filter',
      18,
      `filter, column 18: ${why('actor.adminRoles')}`,
      'QUERY_INVALID',
    ]);
    expect(refusal(() => compileSearch(ADMIN, req('ACTOR.GROUPS co "admin"'))).message).toBe(
      `filter, column 1: ${why('actor.groups')}`,
    );
    expect(refusal(() => compileSearch(ADMIN, req('', { fields: ['actor.status'] }))).message).toBe(
      `fields: ${why('actor.status')}`,
    );
    expect(refusal(() => compileSearch(ADMIN, req('', { facets: ['actor.groupIds'] }))).message).toBe(
      `facets: ${why('actor.groupIds')}`,
    );
  });

  it('fields, facets, limits and cursors are checked too', () => {
    expect(refusal(() => compileSearch(ADMIN, req('', { fields: ['clinet.ipAddress'] }))).message).toBe(
      'fields: unknown field "clinet.ipAddress": did you mean "client.ipAddress"?',
    );
    expect(refusal(() => compileSearch(ADMIN, req('', { facets: ["x') --"] }))).message).toBe(
      `facets: "x') --" is not a field path`,
    );
    expect(refusal(() => compileSearch(ADMIN, req('', { limit: 1001 }))).param).toBe('limit');
    expect(refusal(() => compileSearch(ADMIN, req('', { after: 'bm90IGEgY3Vyc29y' }))).param).toBe('after');
    expect(refusal(() => compileSearch(ADMIN, req('', { since: RANGE.until }))).param).toBe('until');
  });
});

describe('reads what a page shows, not every matching event', () => {
  let store: Store;
  const day = { since: Date.parse('2026-03-02T00:00:00Z'), until: Date.parse('2026-03-03T00:00:00Z') };
  // 20,000 events of one org in one day: more than one granule of the sorting key (8,192 rows at most each).
  const N = 20_000;
  beforeAll(async () => {
    store = await migratedStore('search_reads');
    await store.command(
      `INSERT INTO ${store.database}.events_v4 (org, uuid, published, event_type, raw)
       SELECT 'acme', concat('e-', leftPad(toString(number), 5, '0')),
              toDateTime64('2026-03-02 01:00:00', 3, 'UTC') + toIntervalSecond(number),
              'user.session.start',
              concat('{"uuid":"e-', leftPad(toString(number), 5, '0'), '","client":{"ipAddress":"10.0.0.', toString(number % 200), '"}}')
       FROM numbers(${N})`,
    );
  });
  afterAll(async () => store?.close());

  /** Each table read of a query's plan: the columns it outputs, its PREWHERE, the sorting key's granules read/of. */
  async function reads(q: BoundQuery) {
    const plan = await store.query<{ explain: string }>(
      `EXPLAIN indexes = 1 ${q.sql.replaceAll('{db}', store.database)}`,
      q.params,
    );
    const blocks = plan
      .map((r) => r.explain)
      .join('\n')
      .split('ReadFromMergeTree')
      .slice(1);
    return blocks.map((b) => ({
      output: /Output: (.*)/.exec(b)?.[1] ?? '',
      prewhere: /Prewhere filter column: (.*)/.exec(b)?.[1] ?? '',
      granules: /PrimaryKey[\s\S]*?Granules: (\d+\/\d+)/.exec(b)?.[1] ?? '',
    }));
  }

  it("the first page reads `raw` only in its own events' granule; the scope is PREWHERE, the filter is not", async () => {
    const req: SearchRequest = {
      filter: '',
      org: 'acme',
      ...day,
      fields: ['client.ipAddress'],
      facets: ['client.ipAddress'],
      histogram: true,
      limit: 50,
      raw: true,
    };
    const c = compileSearch(ADMIN, req);
    const page = await reads(c.events);
    const rawRead = page.filter((r) => /\braw\b/.test(r.output));
    expect(rawRead).toHaveLength(1);
    const [read, of] = rawRead[0]!.granules.split('/').map(Number);
    expect([read, of! > 1]).toEqual([1, true]);
    // The facet reads `raw` for every event in scope, found before FINAL's fold by the sorting key's columns.
    const [facet] = await reads(c.facets[0]!);
    expect(facet!.prewhere).toMatch(/org = 'acme'/);
    expect(facet!.prewhere).toMatch(/published >= /);
    // A filter on a value column decides on the folded event: never PREWHERE.
    const filtered = compileSearch(ADMIN, { ...req, filter: 'client.ipAddress eq "10.0.0.7"' });
    for (const q of [filtered.events, ...filtered.facets, filtered.histogram!])
      for (const r of await reads(q)) expect(r.prewhere).not.toMatch(/raw|JSONExtract/);
    // And the answers are the same as ever: the newest 50, the facet over every event.
    const got = await search(store, ADMIN, req);
    expect(got.rows.map((r) => r.uuid)).toEqual(
      Array.from({ length: 50 }, (_, i) => `e-${String(N - 1 - i).padStart(5, '0')}`),
    );
    expect(got.rows[0]!['client.ipAddress']).toBe(`10.0.0.${(N - 1) % 200}`);
    expect(got.facets![0]!.values.map((v) => v.n)).toEqual(Array(10).fill(N / 200));
    const f = await search(store, ADMIN, { ...req, filter: 'client.ipAddress eq "10.0.0.7"' });
    expect([f.rows.length, f.histogram!.buckets.reduce((s, b) => s + b.n, 0)]).toEqual([50, N / 200]);
  });
});
