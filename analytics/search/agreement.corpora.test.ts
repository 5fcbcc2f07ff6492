/**
 * Search and a match rule agree on the corpus's events (the service's own
 * samples, as they are): for filters generated from the values those events
 * hold, on every operator, an event is in the search's result iff the same
 * filter as a match rule fires on it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertChunk } from '../../bench/analytics/load.js';
import type { Principal } from '../../platform/access.js';
import type { Store } from '../../platform/store/index.js';
import { validLogEvents } from '../../test/support/corpus.js';
import { migratedStore } from '../testing.js';
import { disagreements, generatedFilters } from './agreement.fixture.js';

const ADMIN: Principal = { kind: 'key', id: 'admin', name: 'admin', orgs: 'all', role: 'viewer' };

describe('search agrees with the alerting engine on the corpus events', () => {
  let store: Store;
  const events = validLogEvents();
  const times = events.map((e) => Date.parse(String(e.published)));
  const range = { since: Math.min(...times), until: Math.max(...times) + 1 };
  beforeAll(async () => {
    store = await migratedStore('search_corpus');
    await insertChunk(
      store,
      events.map((event) => ({ org: 'corpus', event })),
    );
  });
  afterAll(async () => store?.close());

  it('on every operator', async () => {
    const { filters, used } = generatedFilters(11, 400, events);
    const bad = await disagreements(store, ADMIN, 'corpus', range, events, filters);
    expect(bad.slice(0, 5)).toEqual([]);
    expect(used.size).toBe(13);
  }, 300_000);
});
