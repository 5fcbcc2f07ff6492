/**
 * Every parameter of every query, given hostile text: refused (with the
 * parameter named) or bound as a plain value that matches nothing, and the
 * data untouched afterwards. Real embedded ClickHouse.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../platform/store/index.js';
import { QueryParamError } from './params.js';
import { allParams } from './query.js';
import { QUERIES } from './registry.js';
import { runNamedQuery } from './run.js';
import { loadedStore, RANGE } from './testing.js';
import { EVENTS_TABLE } from '../schemas/tables.js';

let store: Store;

beforeAll(async () => {
  ({ store } = await loadedStore());
}, 120_000);

afterAll(async () => {
  await store?.close();
});

const HOSTILE = [
  "acme' OR 1=1 --",
  "acme') OR ('1'='1",
  'acme}; DROP TABLE events_v2; --',
  "2026-01-05T00:00:00Z' OR 1=1 --",
  '1 OR 1=1',
  '100; DROP TABLE deadletter',
  '{org:String}',
  "acme\u0000'",
];

async function counts(): Promise<string> {
  const [row] = await store.query<{ e: string; d: string }>(
    `SELECT (SELECT count() FROM ${store.database}.${EVENTS_TABLE}) AS e, (SELECT count() FROM ${store.database}.deadletter) AS d`,
  );
  return `${row!.e}/${row!.d}`;
}

describe('injection through every parameter', () => {
  it('is refused naming the parameter, or harmless (no rows from the org, data intact)', async () => {
    const before = await counts();
    let refused = 0;
    let bound = 0;
    for (const q of QUERIES) {
      const defaults: Record<string, string> = { org: 'acme', ...RANGE };
      for (const p of allParams(q)) {
        for (const evil of HOSTILE) {
          const params = { ...defaults, [p.name]: evil };
          try {
            const r = await runNamedQuery(store, q.name, params);
            // Only a string parameter may accept hostile text, and then as a value that matches no org.
            expect(p.kind, `${q.name}.${p.name} accepted ${JSON.stringify(evil)}`).toBe('string');
            expect(
              r.rows.filter((row) => !('gap' in row)),
              `${q.name}.${p.name}`,
            ).toEqual([]);
            bound++;
          } catch (err) {
            expect(err, `${q.name}.${p.name} = ${JSON.stringify(evil)}: ${(err as Error).message}`).toBeInstanceOf(
              QueryParamError,
            );
            expect((err as QueryParamError).param).toBe(p.name);
            refused++;
          }
        }
      }
      // A hostile parameter *name* is refused too.
      await expect(runNamedQuery(store, q.name, { ...defaults, 'org:String} OR 1=1 --': 'x' })).rejects.toBeInstanceOf(
        QueryParamError,
      );
    }
    expect(refused).toBeGreaterThan(0);
    expect(bound).toBeGreaterThan(0);
    expect(await counts()).toBe(before);
    expect(before).not.toBe('0/0');
  });
});
