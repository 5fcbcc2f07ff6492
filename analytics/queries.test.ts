/**
 * Every named query against generated data in real embedded ClickHouse: the
 * planted attack is found, the innocent look-alike (or a clean org) is not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../platform/store/index.js';
import type { Plants } from '../bench/analytics/plants.js';
import { ALL_ORGS } from './query.js';
import { QUERIES } from './registry.js';
import { runNamedQuery } from './run.js';
import { loadedStore, RANGE } from './testing.js';

let store: Store;
let plants: Plants;

beforeAll(async () => {
  ({ store, plants } = await loadedStore());
}, 120_000);

afterAll(async () => {
  await store?.close();
});

describe('the query library', () => {
  it('has at least 25 queries, each with a planted pattern to find', () => {
    expect(QUERIES.length).toBeGreaterThanOrEqual(25);
    expect(new Set(plants.expectations.map((e) => e.query))).toEqual(new Set(QUERIES.map((q) => q.name)));
  });

  it("reads every org with org=*: a count over all orgs is the sum of the orgs' counts", async () => {
    const volume = async (org: string) =>
      (await runNamedQuery(store, 'event_volume_gaps', { org, ...RANGE, limit: '10000' })).rows.reduce(
        (n, row) => n + Number(row.events),
        0,
      );
    const orgs = ['acme', 'globex', 'org-002'];
    const each = await Promise.all(orgs.map(volume));
    expect(each.every((n) => n > 0)).toBe(true);
    expect(await volume(ALL_ORGS)).toBe(each.reduce((a, b) => a + b, 0));
  });

  it('finds nothing in an org that does not exist', async () => {
    for (const q of QUERIES) {
      const r = await runNamedQuery(store, q.name, { org: 'no-such-org', ...RANGE });
      expect(
        r.rows.filter((row) => !('gap' in row)),
        q.name,
      ).toEqual([]);
    }
  });
});

describe.each(QUERIES.map((q) => q.name))('%s', (name) => {
  it('finds the planted pattern and not the control', async () => {
    for (const e of plants.expectations.filter((x) => x.query === name)) {
      const params = { ...RANGE, ...e.params };
      const r = await runNamedQuery(store, name, { org: 'acme', ...params });
      expect(r.columns).toContain(e.column);
      const values = r.rows.map((row) => String(row[e.column]));
      expect(values, `${name}: ${e.column} should include ${e.found}`).toContain(e.found);
      if (e.absent !== undefined)
        expect(values, `${name}: ${e.column} should not include ${e.absent}`).not.toContain(e.absent);
      if (e.controlOrg !== undefined) {
        const control = await runNamedQuery(store, name, { org: e.controlOrg, ...params });
        expect(control.rows, `${name} in ${e.controlOrg}`).toEqual([]);
      }
    }
  });
});

// A gap in one org's volume is no gap in all orgs' together: that finding belongs to one org alone.
const ACROSS_ORGS = QUERIES.map((q) => q.name).filter((n) => n !== 'event_volume_gaps');

describe.each(ACROSS_ORGS)('%s over every org', (name) => {
  it('finds the planted pattern for every org at once (org=*), as for its own org', async () => {
    for (const e of plants.expectations.filter((x) => x.query === name)) {
      const params = { ...RANGE, ...e.params };
      const r = await runNamedQuery(store, name, { org: ALL_ORGS, ...params });
      expect(r.columns).toContain(e.column);
      expect(
        r.rows.map((row) => String(row[e.column])),
        `${name} over every org: ${e.column} should include ${e.found}`,
      ).toContain(e.found);
    }
  });
});
