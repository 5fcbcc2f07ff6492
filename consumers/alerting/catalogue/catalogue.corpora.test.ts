/**
 * The vendor's detection catalogue as published (34 detections, 12 hunts):
 * every file loads unmodified; every file with a System Log filter fires on
 * an event built from its own fields and stays silent on a near miss, on the
 * stream (the match rule) and in ClickHouse (the hunt SQL); every prose-only
 * file has a rule named after it in the shipped content pack.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertChunk } from '../../../bench/analytics/load.js';
import { silentLogger } from '../../../platform/log.js';
import { migrate, openStore, type Store } from '../../../platform/store/index.js';
import { CORPORA_DIR } from '../../../test/support/corpus.js';
import { randomName } from '../../../test/support/wait.js';
import { PartitionEngine } from '../engine.js';
import { huntQuery } from '../filter/hunt.js';
import { lintPaths } from '../lint.js';
import { loadRulePaths, type LoadedFile } from '../rules/sources.js';
import { witness, type Witness } from './witness.js';

const CATALOGUE = join(CORPORA_DIR, 'detections', 'okta_customer-detections');
const PACK = fileURLToPath(new URL('../content/okta-catalogue.yaml', import.meta.url));

const BASE = {
  published: '2026-03-02T10:00:00.000Z',
  actor: { id: '00u1', type: 'User', alternateId: 'alice@example.com', displayName: 'Alice' },
  client: { ipAddress: '198.51.100.7' },
};

const loaded = loadRulePaths([CATALOGUE]);
const withFilter = loaded.filter((l) => l.catalogue?.tree);
const name = (l: LoadedFile) =>
  l.file
    .split('/')
    .pop()!
    .replace(/\.yml$/, '');

function built(l: LoadedFile, i: number): Witness {
  const w = witness(l.catalogue!.tree!, BASE);
  w.fire['uuid'] = `fire-${i}`;
  w.miss['uuid'] = `miss-${i}`;
  return w;
}

describe('the vendor catalogue, as published', () => {
  it('loads all 46 files: 34 detections (25 with a filter), 12 hunts (all with a filter)', () => {
    expect(loaded).toHaveLength(46);
    expect(loaded.every((l) => l.format === 'okta-catalogue')).toBe(true);
    const det = loaded.filter((l) => l.catalogue!.kind === 'detection');
    const hunts = loaded.filter((l) => l.catalogue!.kind === 'hunt');
    expect([
      det.length,
      det.filter((l) => l.catalogue!.tree).length,
      hunts.length,
      hunts.filter((l) => l.catalogue!.tree).length,
    ]).toEqual([34, 25, 12, 12]);
    // Detections run on the stream; hunts run with `hooklog hunt`.
    expect(
      det.filter((l) => l.catalogue!.tree).every((l) => l.rules.length === 1 && l.rules[0]!.kind === 'match'),
    ).toBe(true);
    expect(hunts.every((l) => l.rules.length === 0)).toBe(true);
  });

  withFilter.forEach((l, i) => {
    it(`${name(l)}: fires on its own fields, not on a near miss`, () => {
      const w = built(l, i);
      const rule = l.catalogue!.rule!;
      expect(rule.where(w.fire), JSON.stringify(w.fire)).toBe(true);
      expect(rule.where(w.miss), JSON.stringify(w.miss)).toBe(false);
      if (l.catalogue!.kind === 'detection') {
        const engine = new PartitionEngine([rule], { allowedLatenessMs: 0 });
        expect(engine.process(w.fire, { org: 'acme', timeMs: Date.parse(BASE.published), id: 'f' })).toHaveLength(1);
        expect(engine.process(w.miss, { org: 'acme', timeMs: Date.parse(BASE.published), id: 'm' })).toHaveLength(0);
      }
    });
  });

  it('every field path its filters read is a LogEvent field: rules lint --strict finds no error', () => {
    // FastPass detections read authenticationContext.authenticatorContext.*, which the OpenAPI schema lacks.
    const problems = lintPaths([CATALOGUE], undefined, { strict: true });
    expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(problems.filter((p) => p.message.startsWith('"')).map((p) => p.message)).toEqual([
      '"result" is not a LogEvent field; read as outcome.result',
    ]);
  });

  it('every prose-only detection has a content pack rule named after it', () => {
    const prose = loaded
      .filter((l) => !l.catalogue!.tree)
      .map(name)
      .sort();
    expect(prose).toHaveLength(9);
    const pack = loadRulePaths([PACK]).flatMap((f) => f.rules.map((r) => r.id));
    for (const p of prose)
      expect(
        pack.some((id) => id === `okta-catalogue.${p}` || id.startsWith(`okta-catalogue.${p}.`)),
        p,
      ).toBe(true);
  });
});

describe('the catalogue hunts in ClickHouse', () => {
  let store: Store;
  beforeAll(async () => {
    store = openStore({
      database: randomName('catalogue'),
      dataDir: mkdtempSync(join(tmpdir(), 'hooklog-catalogue-')),
      logger: silentLogger(),
    });
    await migrate(store, silentLogger());
    const events = withFilter.flatMap((l, i) => {
      const w = built(l, i);
      return [w.fire, w.miss].map((event) => ({ org: 'acme', event }));
    });
    await insertChunk(store, events);
  });
  afterAll(async () => store?.close());

  it('each filter, compiled to SQL, finds its own witness and not its near miss', async () => {
    for (const [i, l] of withFilter.entries()) {
      const { sql, params } = huntQuery(l.catalogue!.tree!);
      const rows = await store.query<{ uuid: string }>(sql.replaceAll('{db}', store.database), {
        ...params,
        org: 'acme',
        since: '2026-03-01 00:00:00.000',
        until: '2026-04-01 00:00:00.000',
        limit: 1000,
      });
      const uuids = rows.map((r) => r.uuid);
      expect(uuids, name(l)).toContain(`fire-${i}`);
      expect(uuids, name(l)).not.toContain(`miss-${i}`);
    }
  });
});
