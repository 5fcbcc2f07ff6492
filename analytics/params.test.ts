import { describe, expect, it } from 'vitest';
import { COMMON_PARAMS, parseParams, QueryParamError, type ParamSpec } from './params.js';
import { describeQueries, findQuery } from './registry.js';
import { prepareQuery } from './run.js';

const specs: ParamSpec[] = [
  ...COMMON_PARAMS,
  { name: 'min_users', kind: 'uint', description: 'x', default: 10, min: 2 },
];
const ok = { org: 'acme', since: '2026-01-01T00:00:00Z', until: '2026-01-02T00:00:00+01:00' };

function refusal(raw: Record<string, string>): string {
  try {
    parseParams(specs, raw);
  } catch (err) {
    expect(err).toBeInstanceOf(QueryParamError);
    return (err as QueryParamError).param;
  }
  return 'accepted';
}

describe('parseParams', () => {
  it('types the values and fills defaults', () => {
    expect(parseParams(specs, { ...ok, min_users: '25' })).toEqual({
      org: 'acme',
      since: '2026-01-01 00:00:00.000',
      until: '2026-01-01 23:00:00.000',
      limit: 100,
      min_users: 25,
    });
  });

  it('names the parameter that is missing, unknown, malformed or out of range', () => {
    expect(refusal({ since: ok.since, until: ok.until })).toBe('org');
    expect(refusal({ ...ok, since: 'yesterday' })).toBe('since');
    expect(refusal({ ...ok, until: '2025-12-31T00:00:00Z' })).toBe('until');
    expect(refusal({ ...ok, limit: '0' })).toBe('limit');
    expect(refusal({ ...ok, limit: '-5' })).toBe('limit');
    expect(refusal({ ...ok, limit: '1e3' })).toBe('limit');
    expect(refusal({ ...ok, min_users: '1' })).toBe('min_users');
    expect(refusal({ ...ok, min_user: '3' })).toBe('min_user');
    expect(refusal({ ...ok, org: '' })).toBe('org');
    expect(refusal({ ...ok, org: 'x'.repeat(600) })).toBe('org');
  });
});

describe('the registry', () => {
  it('binds every value: no query text contains anything but {name:Type} placeholders of declared parameters', () => {
    for (const q of describeQueries()) {
      const declared = new Set(q.params.map((p) => p.name));
      const { sql } = prepareQuery(q.name, 'db', { org: 'a', since: ok.since, until: ok.until });
      const used = [...sql.matchAll(/\{(\w+):[^}]+\}/g)].map((m) => m[1]!);
      for (const u of used) expect(declared.has(u), `${q.name} uses {${u}}`).toBe(true);
      expect(sql).not.toContain('{db}');
    }
  });

  it('refuses an unknown query name', () => {
    expect(() => findQuery('drop_everything')).toThrow(/no query named/);
  });
});
