/**
 * Test support: a store with the shipped migrations applied and the
 * generated data set (background + planted attacks) loaded.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../platform/log.js';
import { migrate, openStore, type Store } from '../platform/store/index.js';
import { randomName } from '../test/support/wait.js';
import { backgroundEvents, resetUuids, type GenOptions } from '../bench/analytics/generate.js';
import { insertChunk } from '../bench/analytics/load.js';
import { plant, RESERVED, type Plants } from '../bench/analytics/plants.js';

/** Small enough for seconds, dense enough that every org has events every hour (no accidental volume gaps). */
export const TEST_DATA: GenOptions = {
  orgs: 3,
  usersPerOrg: 40,
  days: 3,
  eventsPerUserPerDay: 30,
  start: new Date('2026-01-05T00:00:00Z'),
  seed: 7,
};

export const RANGE = {
  since: TEST_DATA.start.toISOString(),
  until: new Date(TEST_DATA.start.getTime() + TEST_DATA.days * 86_400_000).toISOString(),
};

/** An empty store of its own (database and directory named after `prefix`) with the shipped migrations applied. */
export async function migratedStore(prefix: string): Promise<Store> {
  const store = openStore({
    database: randomName(prefix),
    dataDir: mkdtempSync(join(tmpdir(), `hooklog-${prefix}-`)),
    logger: silentLogger(),
  });
  await migrate(store, silentLogger());
  return store;
}

export async function loadedStore(): Promise<{ store: Store; plants: Plants; events: number }> {
  const store = await migratedStore('analytics');
  resetUuids(11);
  const plants = plant(TEST_DATA);
  let events = 0;
  for (const chunk of backgroundEvents(TEST_DATA, plants.silence, RESERVED)) {
    await insertChunk(store, chunk);
    events += chunk.length;
  }
  await insertChunk(store, plants.events);
  await store.insertJson('deadletter', plants.deadletters);
  await store.insertJson('arrivals', plantedArrivals(plants));
  return { store, plants, events: events + plants.events.length };
}

/**
 * Arrivals of the planted events: every one by hook, every other one by the System Log too, as the sink writes them.
 */
function plantedArrivals(plants: Plants): object[] {
  return plants.events.flatMap((g, i) => {
    const e = g.event as { uuid: string; eventType: string; published: string };
    const published = e.published.replace('T', ' ').replace('Z', '');
    const base = { org: g.org, event_type: e.eventType, published, uuid: e.uuid, copies: 1, hook_id: 'bench' };
    const hookAt = new Date(Date.parse(e.published) + 1500).toISOString().replace('T', ' ').replace('Z', '');
    return [
      { ...base, path: 'hook', first_received: hookAt },
      ...(i % 2 === 0 ? [{ ...base, path: 'system-log', first_received: hookAt }] : []),
    ];
  });
}
