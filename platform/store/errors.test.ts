import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ClickHouseError } from '@clickhouse/client';
import { parseError } from '@clickhouse/client-common';
import { HooklogError } from '../errors.js';
import { silentLogger } from '../log.js';
import { classifyClickHouseError } from './errors.js';
import { openStore } from './store.js';

const server = (type: string, code: string, message = `something about ${type}`) =>
  new ClickHouseError({ message, code, type });

describe('classifyClickHouseError', () => {
  it('marks data the table cannot take as a non-retriable row rejection', () => {
    for (const [type, code] of [
      ['CANNOT_PARSE_INPUT_ASSERTION_FAILED', '27'],
      ['CANNOT_PARSE_IPV6', '676'],
      ['CANNOT_PARSE_DATETIME', '41'],
      ['TYPE_MISMATCH', '53'],
      ['INCORRECT_DATA', '117'],
      ['VIOLATED_CONSTRAINT', '469'],
      ['DECIMAL_OVERFLOW', '407'],
      ['FUNCTION_THROW_IF_VALUE_IS_NON_ZERO', '395'],
    ] as const) {
      const e = classifyClickHouseError(server(type, code));
      expect(e.code, type).toBe('STORE_REJECTED_ROW');
      expect(e.retriable, type).toBe(false);
      expect(e.message).toContain(type);
    }
  });

  it('classifies what the real engine refuses in a row as a row rejection, codes the old hand list missed too', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-rows-'));
    const store = openStore({ database: 'row_check', dataDir, logger: silentLogger() });
    try {
      await store.command('CREATE DATABASE IF NOT EXISTS row_check');
      const cases: Array<[columns: string, row: object, type: string]> = [
        ["e Enum8('a' = 1)", { e: 'not-a-member' }, 'UNKNOWN_ELEMENT_OF_ENUM'],
        ['n UInt32, CONSTRAINT small CHECK n < 10', { n: 20 }, 'VIOLATED_CONSTRAINT'],
        ['a Array(Array(UInt8))', { a: [[1], 'x'] }, 'CANNOT_READ_ARRAY_FROM_TEXT'],
        ['d Decimal(5, 2)', { d: 12345678.9 }, 'ARGUMENT_OUT_OF_BOUND'],
        ['s String, CONSTRAINT len CHECK intDiv(1, length(s) - 3) >= -1', { s: 'abc' }, 'ILLEGAL_DIVISION'],
      ];
      for (const [i, [columns, row, type]] of cases.entries()) {
        await store.command(`CREATE TABLE row_check.t${i} (${columns}) ENGINE = MergeTree ORDER BY tuple()`);
        const err = await store.insertJson(`t${i}`, [row], { dedupToken: `row-${i}` }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, type).toBeInstanceOf(HooklogError);
        expect((err as HooklogError).message, type).toMatch(new RegExp(`^ClickHouse ${type} \\(\\d+\\): `));
        expect((err as HooklogError).code, type).toBe('STORE_REJECTED_ROW');
        expect((err as HooklogError).retriable, type).toBe(false);
      }
    } finally {
      await store.close();
    }
  });

  it('retries a real TOO_MANY_PARTS from the engine', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-parts-'));
    const store = openStore({ database: 'parts_check', dataDir, logger: silentLogger() });
    try {
      await store.command('CREATE DATABASE IF NOT EXISTS parts_check');
      await store.command(
        'CREATE TABLE parts_check.t (n UInt32) ENGINE = MergeTree ORDER BY tuple() ' +
          'SETTINGS parts_to_throw_insert = 1, parts_to_delay_insert = 1',
      );
      await store.insertJson('t', [{ n: 1 }], { dedupToken: 'parts-1' });
      await expect(store.insertJson('t', [{ n: 2 }], { dedupToken: 'parts-2' })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
        retriable: true,
        message: expect.stringMatching(/^ClickHouse TOO_MANY_PARTS \(252\)/),
      });
    } finally {
      await store.close();
    }
  });

  it('retries overload, memory, parts and network trouble', () => {
    for (const [type, code] of [
      ['TOO_MANY_PARTS', '252'],
      ['MEMORY_LIMIT_EXCEEDED', '241'],
      ['TOO_MANY_SIMULTANEOUS_QUERIES', '202'],
      ['TIMEOUT_EXCEEDED', '159'],
      ['NETWORK_ERROR', '210'],
      ['TABLE_IS_READ_ONLY', '242'],
      ['SERVER_OVERLOADED', '745'],
      ['QUOTA_EXCEEDED', '201'],
      ['UNKNOWN_STATUS_OF_INSERT', '319'],
    ] as const) {
      const e = classifyClickHouseError(server(type, code));
      expect(e.code, type).toBe('STORE_UNAVAILABLE');
      expect(e.retriable, type).toBe(true);
    }
  });

  it('treats "too many partitions for a single insert block" as the batch\'s fault, not the server\'s', () => {
    const e = classifyClickHouseError(
      server(
        'TOO_MANY_PARTS',
        '252',
        "Too many partitions for single INSERT block (more than 100). The limit is controlled by 'max_partitions_per_insert_block' setting.",
      ),
    );
    expect(e.code).toBe('STORE_REJECTED_ROW');
    expect(e.retriable).toBe(false);
  });

  it('holds mistakes (syntax, unknown table, access) without calling them a row rejection', () => {
    for (const [type, code] of [
      ['SYNTAX_ERROR', '62'],
      ['UNKNOWN_TABLE', '60'],
      ['NO_SUCH_COLUMN_IN_TABLE', '16'],
      ['ACCESS_DENIED', '497'],
      ['TABLE_IS_PERMANENTLY_READ_ONLY', '774'],
    ] as const) {
      const e = classifyClickHouseError(server(type, code));
      expect(e.code, type).toBe('STORE_QUERY_FAILED');
      expect(e.retriable, type).toBe(false);
      expect(e.message, type).toBe(`ClickHouse ${type} (${code}): something about ${type}`);
    }
  });

  it('holds a code not in the table, saying so, rather than dead-letter or retry it blindly', () => {
    for (const [type, code] of [
      ['LOGICAL_ERROR', '49'],
      ['SOMETHING_A_NEWER_SERVER_ADDED', '12345'],
    ] as const) {
      const e = classifyClickHouseError(server(type, code));
      expect(e.code, type).toBe('STORE_QUERY_FAILED');
      expect(e.retriable, type).toBe(false);
      expect(e.message, type).toMatch(/not in hooklog's table of ClickHouse error kinds/);
    }
  });

  it('goes by the number, not the name: a renamed code keeps its kind', () => {
    expect(classifyClickHouseError(server('UNKNOWN_ELEMENT_IN_ENUM', '691')).code).toBe('STORE_REJECTED_ROW');
    expect(classifyClickHouseError(server('TYPE_MISMATCH', '12345')).code).toBe('STORE_QUERY_FAILED');
  });

  it("recognises the chdb connection's ClickHouseError (another copy of the class) by shape", () => {
    const chdbStyle = parseError(
      "Code: 27. DB::Exception: Cannot parse input: expected '\"' before: 'x': (at row 1). (CANNOT_PARSE_INPUT_ASSERTION_FAILED) (version 26.7.2.1)",
    );
    expect(chdbStyle instanceof ClickHouseError).toBe(false);
    expect(classifyClickHouseError(chdbStyle).code).toBe('STORE_REJECTED_ROW');
  });

  it('classifies socket failures and client timeouts as retriable', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
    expect(classifyClickHouseError(refused)).toMatchObject({ code: 'STORE_UNAVAILABLE', retriable: true });
    expect(classifyClickHouseError(new Error('Timeout error.'))).toMatchObject({ code: 'TIMEOUT', retriable: true });
    expect(classifyClickHouseError(new Error('socket hang up'))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      retriable: true,
    });
    expect(classifyClickHouseError(new Error('who knows'))).toMatchObject({
      code: 'STORE_QUERY_FAILED',
      retriable: false,
    });
  });

  it('keeps the original as the cause and passes HooklogErrors through', () => {
    const original = server('TYPE_MISMATCH', '53');
    expect(classifyClickHouseError(original).cause).toBe(original);
    const mine = new HooklogError('TIMEOUT', 'x', { retriable: true });
    expect(classifyClickHouseError(mine)).toBe(mine);
  });

  it('classifies a real refused connection to a server as retriable STORE_UNAVAILABLE', async () => {
    // Port 1 on loopback: nothing listens there, the kernel refuses at once.
    const store = openStore({
      url: 'http://127.0.0.1:1',
      database: 'hooklog',
      dataDir: '/nonexistent',
      requestTimeoutMs: 5000,
      logger: silentLogger(),
    });
    try {
      await expect(store.ping()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', retriable: true });
      await expect(store.query('SELECT 1')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', retriable: true });
      expect(store.kind).toBe('server');
    } finally {
      await store.close();
    }
  });
});
