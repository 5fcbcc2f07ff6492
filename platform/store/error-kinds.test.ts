/**
 * The kind table against ClickHouse's own list of error codes, read from the engine hooklog embeds
 * (chdb's `system.errors`, every code listed): a name or number typed wrong, a code in two kinds, or a
 * code a newer engine adds that speaks of values but is not classified fails here, naming it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../log.js';
import { CLICKHOUSE_ERROR_KINDS, MESSAGE_RULES, clickHouseErrorKind, type ClickHouseErrorKind } from './error-kinds.js';
import { openStore, type Store } from './store.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-error-kinds-'));
let store: Store;
/** ClickHouse's error codes, name → number, as the engine lists them. */
let engine: Map<string, number>;

const entries = (
  Object.entries(CLICKHOUSE_ERROR_KINDS) as Array<[ClickHouseErrorKind, Record<string, number>]>
).flatMap(([kind, codes]) => Object.entries(codes).map(([name, code]) => ({ kind, name, code })));

beforeAll(async () => {
  store = openStore({ database: 'error_kinds', dataDir, logger: silentLogger() });
  const rows = await store.query<{ code: number; name: string }>(
    'SELECT DISTINCT code, name FROM system.errors SETTINGS system_events_show_zero_values = 1',
  );
  engine = new Map(rows.map((r) => [r.name, Number(r.code)]));
}, 60_000);

afterAll(async () => {
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the ClickHouse error kind table', () => {
  it("names every code as ClickHouse does, with ClickHouse's number", () => {
    expect(engine.size).toBeGreaterThan(500);
    const wrong = entries.filter((e) => engine.get(e.name) !== e.code).map((e) => `${e.name}=${e.code}`);
    expect(wrong).toEqual([]);
  });

  it('puts each code in one kind only', () => {
    const seen = new Map<number, string>();
    const twice = entries.filter((e) => seen.has(e.code) || !seen.set(e.code, e.name)).map((e) => e.name);
    expect(twice).toEqual([]);
  });

  it("classifies every code of the engine's list whose name speaks of a value's parsing, type, range or size", () => {
    // Names that read as "this value is wrong", minus those about files, schemas or queries, never an insert's rows.
    const valueLike =
      /^CANNOT_PARSE_|_FROM_TEXT$|OUT_OF_RANGE_OF_DATA_TYPE$|OVERFLOW$|^TOO_LARGE_(STRING|ARRAY)_SIZE$|CONSTRAINT|ENUM|TUPLE/;
    const notAboutRows = new Set([
      'CANNOT_PARSE_ELF',
      'CANNOT_PARSE_DWARF',
      'CANNOT_PARSE_YAML',
      'CANNOT_PARSE_PROTOBUF_SCHEMA',
      'CANNOT_PARSE_CAPN_PROTO_SCHEMA',
      'CANNOT_PARSE_BACKUP_SETTINGS',
      'CANNOT_PARSE_PROMQL_QUERY',
      'UNKNOWN_OVERFLOW_MODE',
      'ZERO_ARRAY_OR_TUPLE_INDEX',
    ]);
    const classified = new Set(entries.map((e) => e.name));
    const missing = [...engine.keys()].filter((n) => valueLike.test(n) && !notAboutRows.has(n) && !classified.has(n));
    expect(missing).toEqual([]);
  });

  it('looks codes up by number, with message rules first and unknown codes unclassified', () => {
    expect(clickHouseErrorKind(469, 'Constraint `c` … is violated')).toBe('row');
    expect(clickHouseErrorKind(153, 'Division by zero')).toBe('row');
    expect(clickHouseErrorKind(130, "Array does not start with '[' character")).toBe('row');
    expect(clickHouseErrorKind(252, 'Too many parts (300). Merges are processing significantly slower')).toBe(
      'transient',
    );
    expect(clickHouseErrorKind(252, 'Too many partitions for single INSERT block (more than 100)')).toBe('row');
    expect(clickHouseErrorKind(774, 'Table is in readonly mode permanently')).toBe('config');
    expect(clickHouseErrorKind(49, 'Logical error')).toBe('unclassified');
    expect(clickHouseErrorKind(123_456, 'a code from a newer server')).toBe('unclassified');
    for (const rule of MESSAGE_RULES) expect([...engine.values()]).toContain(rule.code);
  });
});
