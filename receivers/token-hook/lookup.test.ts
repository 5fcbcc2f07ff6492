/**
 * Lookup tables on real files: parsing (CSV quoting, JSON shapes), and
 * reloads — a changed file is served once reloaded, a broken one keeps the
 * previous rows — observed through the answers a running hook gives.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HooklogError } from '../../platform/errors.js';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { waitFor } from '../../test/support/wait.js';
import { parseCsv } from './csv.js';
import { LookupTable, needsRead, parseTable } from './lookup.js';
import { decide, startTokenHooks, type TokenHooks } from './service.js';
import { configWith, freshDir, hookEntry, sampleRequest } from './testing.js';

const log = silentLogger();
const dir = freshDir('token-lookup');
let stream: EmbeddedStream;
const running: TokenHooks[] = [];

beforeAll(async () => {
  stream = await openEmbeddedStream({ dataDir: dir, logger: log });
});
afterAll(async () => {
  for (const h of running) await h.stop();
  await stream.close();
});

const csvTable = {
  name: 't',
  file: 'x',
  format: 'csv' as const,
  key: 'login',
  ignore_case: false,
  reload_interval_ms: 100,
};

describe('parseCsv', () => {
  it('reads quotes, doubled quotes, commas and line breaks in quotes, CRLF, a BOM, and skips blank lines', () => {
    expect(parseCsv('\uFEFFa,b,c\r\n"x, y","say ""hi""","two\nlines"\n\n1,,3\n')).toEqual([
      ['a', 'b', 'c'],
      ['x, y', 'say "hi"', 'two\nlines'],
      ['1', '', '3'],
    ]);
    expect(parseCsv('a,b\n1,2')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(() => parseCsv('a,b\n"open,2\n3,4\n')).toThrow(/unterminated quoted field starting on line 2/);
  });
});

describe('parseTable', () => {
  it('keys CSV rows by the key column, checks the columns rules read, refuses ragged rows', () => {
    const rows = parseTable('login,dept\nann@x.com,R&D\nbob@x.com,\n,orphan\n', csvTable, new Set(['dept']));
    expect([...rows.keys()]).toEqual(['ann@x.com', 'bob@x.com']);
    expect(rows.get('ann@x.com')).toEqual({ login: 'ann@x.com', dept: 'R&D' });
    expect(() => parseTable('login,dept\na,b\n', csvTable, new Set(['cost']))).toThrow(/column "cost" used by a rule/);
    expect(() => parseTable('user,dept\na,b\n', csvTable, new Set())).toThrow(
      /key column "login" is not in the header/,
    );
    expect(() => parseTable('login,dept\na,b,c\n', csvTable, new Set())).toThrow(/record 2 has 3 fields/);
    // Rows have no prototype: a column named like an Object member is just a missing column.
    expect((rows.get('ann@x.com') as Record<string, unknown>).constructor).toBeUndefined();
  });

  it('reads JSON objects keyed by the lookup key and arrays keyed by a member; folds case when asked', () => {
    const json = { ...csvTable, format: 'json' as const, key: undefined };
    expect(parseTable('{"A":{"r":1},"b":2}', { ...json, ignore_case: true }, new Set()).get('a')).toEqual({ r: 1 });
    const arr = parseTable('[{"id":"x","v":1},{"id":7,"v":2}]', { ...json, key: 'id' }, new Set());
    expect(arr.get('7')).toEqual({ id: 7, v: 2 });
    expect(() => parseTable('[{"v":1}]', { ...json, key: 'id' }, new Set())).toThrow(
      /element 0 has no string or number "id"/,
    );
    expect(() => parseTable('[]', json, new Set())).toThrow(/needs key/);
    expect(() => parseTable('"x"', json, new Set())).toThrow(/object keyed by the lookup key/);
  });
});

describe('reload detection', () => {
  const mark = { dev: 1, ino: 10, size: 100, mtimeMs: 1000, ctimeMs: 1000 };
  it('reads again what is another file, changed, appeared or gone, and what was read within a tick of a write', () => {
    const seen = { mark, digest: 'd', racy: false };
    expect(needsRead(seen, mark)).toBe(false);
    expect(needsRead(seen, { ...mark, ino: 11 })).toBe(true); // renamed over, same size and mtime
    expect(needsRead(seen, { ...mark, ctimeMs: 1001 })).toBe(true); // rewritten in place, mtime kept (cp -p)
    expect(needsRead(seen, { ...mark, size: 99 })).toBe(true);
    expect(needsRead(seen, undefined)).toBe(true);
    expect(needsRead({ mark: undefined, digest: '', racy: false }, undefined)).toBe(false);
    expect(needsRead({ mark: undefined, digest: '', racy: false }, mark)).toBe(true);
    expect(needsRead({ ...seen, racy: true }, mark)).toBe(true);
  });

  // The CI flake: with fs.watchFile the first poll's stat was the baseline, so a file renamed over between the
  // load and that first stat (here: deterministically, before watching starts) was never reloaded.
  it('reloads a file replaced between the load and the start of watching', async () => {
    const file = join(dir, 'race.csv');
    writeFileSync(file, 'login,dept\nada,Labs\n');
    const table = new LookupTable({ ...csvTable, file });
    table.require('dept');
    expect(await table.load()).toBe(1);
    writeFileSync(`${file}.new`, 'login,dept\nada,Platform\nbob,Sales\n');
    renameSync(`${file}.new`, file);
    let reloads = 0;
    table.watch({ reloaded: () => void reloads++, reloadFailed: (_, err) => void expect.fail(String(err)) });
    try {
      await waitFor(() => table.size, { until: (n) => n === 2, what: 'the replaced file', timeoutMs: 5000 });
      expect(table.get('ada')).toEqual({ login: 'ada', dept: 'Platform' });
      expect(reloads).toBe(1);
    } finally {
      await table.stop();
    }
  });
});

describe('a running hook with a lookup table', () => {
  async function startWith(file: string) {
    const config = configWith([
      hookEntry(
        [
          {
            name: 'dept',
            actions: [
              { add: { tokens: 'id', claim: 'dept', lookup: { table: 'emp', key: '{{user.login}}', column: 'dept' } } },
            ],
          },
        ],
        {
          lookups: [{ name: 'emp', file, format: 'csv', key: 'login', reload_interval_ms: 100 }],
        },
      ),
    ]);
    const hooks = await startTokenHooks({
      hooks: config.token_hooks,
      stream,
      topic: 'unused',
      spoolDir: join(dir, 'spool'),
      logger: log,
    });
    running.push(hooks);
    return hooks.get('th')!;
  }
  const dept = (hook: Parameters<typeof decide>[0]) => {
    const a = decide(hook, Buffer.from(JSON.stringify(sampleRequest())), 't');
    if (a.status !== 200) return a.status;
    return (JSON.parse(a.body) as { commands: Array<{ value: Array<{ value: unknown }> }> }).commands[0]!.value[0]!
      .value;
  };

  it('serves a changed file once it is reloaded, keeps the old rows when the new file is broken', async () => {
    const file = join(dir, 'emp.csv');
    writeFileSync(file, 'login,dept\nada.lovelace@acme.example,Labs\n');
    const hook = await startWith(file);
    expect(dept(hook)).toBe('Labs');

    // Replaced the way editors and config management do: a new file renamed over the old.
    writeFileSync(`${file}.new`, 'login,dept\nada.lovelace@acme.example,Platform Engineering\nother@x.com,Sales\n');
    renameSync(`${file}.new`, file);
    await waitFor(() => dept(hook), { until: (v) => v === 'Platform Engineering', what: 'the reloaded value' });
    expect(hook.telemetry.counters.lookupReloads).toBeGreaterThanOrEqual(1);

    writeFileSync(file, 'login,department\nada.lovelace@acme.example,Gone\n');
    await waitFor(() => hook.telemetry.counters.errors.lookup_reload, {
      until: (n) => n >= 1,
      what: 'a failed reload',
    });
    expect(dept(hook)).toBe('Platform Engineering');

    writeFileSync(file, 'login,dept\n"unterminated\n');
    await waitFor(() => hook.telemetry.counters.errors.lookup_reload, {
      until: (n) => n >= 2,
      what: 'a second failed reload',
    });
    expect(dept(hook)).toBe('Platform Engineering');

    writeFileSync(file, 'login,dept\n');
    await waitFor(() => dept(hook), { until: (n) => n === 204, what: 'the emptied table' });
  });

  it('refuses to start, naming the hook and the table, when a file is missing or lacks a column a rule reads', async () => {
    const missing = join(dir, 'nope.csv');
    await expect(startWith(missing)).rejects.toThrow(HooklogError);
    await expect(startWith(missing)).rejects.toThrow(/token hook "th"/);
    const noColumn = join(dir, 'nocol.csv');
    writeFileSync(noColumn, 'login,team\na,b\n');
    await expect(startWith(noColumn)).rejects.toThrow(
      /token hook "th": lookup "emp" .* column "dept" used by a rule is not in the header/,
    );
  });
});
