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
    ] as const) {
      const e = classifyClickHouseError(server(type, code));
      expect(e.code, type).toBe('STORE_REJECTED_ROW');
      expect(e.retriable, type).toBe(false);
      expect(e.message).toContain(type);
    }
  });

  it('classifies a value the real engine refuses for an Enum column as a row rejection', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-enum-'));
    const store = openStore({ database: 'enum_check', dataDir, logger: silentLogger() });
    try {
      await store.command('CREATE DATABASE IF NOT EXISTS enum_check');
      await store.command("CREATE TABLE enum_check.t (e Enum8('a' = 1)) ENGINE = MergeTree ORDER BY tuple()");
      const err = await store.insertJson('t', [{ e: 'not-a-member' }], { dedupToken: 'enum-1' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(HooklogError);
      expect((err as HooklogError).code).toBe('STORE_REJECTED_ROW');
      expect((err as HooklogError).retriable).toBe(false);
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

  it('does not retry mistakes: syntax, unknown table, access', () => {
    for (const [type, code] of [
      ['SYNTAX_ERROR', '62'],
      ['UNKNOWN_TABLE', '60'],
      ['ACCESS_DENIED', '497'],
    ] as const) {
      const e = classifyClickHouseError(server(type, code));
      expect(e.code, type).toBe('STORE_QUERY_FAILED');
      expect(e.retriable, type).toBe(false);
    }
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
