/**
 * Every named query against generated data in real embedded ClickHouse: the
 * planted attack is found, the innocent look-alike (or a clean org) is not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../platform/store/index.js';
import type { Plants } from '../bench/analytics/plants.js';
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
