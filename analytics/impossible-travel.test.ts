/**
 * impossible_travel's narrowing (TRAVELLERS): only users seen at more than one place reach its window, and a
 * user's places may differ in one coordinate only. Trips along a parallel (the same latitude) and along a
 * meridian (the same longitude) must both be found, for one org and over every org, in real embedded ClickHouse.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../platform/store/index.js';
import { eventBy, orgName, resetUuids, user, type User } from '../bench/analytics/generate.js';
import { insertChunk } from '../bench/analytics/load.js';
import type { Place } from '../bench/analytics/catalog.js';
import { ALL_ORGS } from './query.js';
import { runNamedQuery } from './run.js';
import { migratedStore } from './testing.js';

const ORG = orgName(0);
const T0 = Date.parse('2026-01-05T09:00:00Z');
const MINUTE = 60_000;
const place = (city: string, lat: number, lon: number): Place => ({
  city,
  state: city,
  country: city,
  postalCode: '0',
  lat,
  lon,
});
// Madrid and a point on its parallel 4,000 km east; Quito and a point on its meridian 3,300 km south.
const MADRID = place('Madrid', 40.4168, -3.7038);
const MADRID_EAST = place('East of Madrid', 40.4168, 43.0);
const QUITO = place('Quito', -0.1807, -78.4678);
const QUITO_SOUTH = place('South of Quito', -30.0, -78.4678);

let store: Store;
const along = { parallel: user(0, 1), meridian: user(0, 2), stays: user(0, 3), slow: user(0, 4) };

beforeAll(async () => {
  store = await migratedStore('travel');
  resetUuids(3);
  const signIn = (who: User, at: number, where: Place) => ({
    org: ORG,
    event: eventBy(who, { at, type: 'user.session.start', place: where, message: 'User login to Okta' }),
  });
  await insertChunk(store, [
    signIn(along.parallel, T0, MADRID),
    signIn(along.parallel, T0 + 30 * MINUTE, MADRID_EAST),
    signIn(along.meridian, T0, QUITO),
    signIn(along.meridian, T0 + 30 * MINUTE, QUITO_SOUTH),
    signIn(along.stays, T0, MADRID),
    signIn(along.stays, T0 + 30 * MINUTE, MADRID),
    // Far, but a day later: possible.
    signIn(along.slow, T0, QUITO),
    signIn(along.slow, T0 + 24 * 60 * MINUTE, QUITO_SOUTH),
  ]);
}, 60_000);

afterAll(async () => {
  await store?.close();
});

describe('impossible_travel', () => {
  for (const org of [ORG, ALL_ORGS])
    it(`finds trips along a parallel and along a meridian (org ${org})`, async () => {
      const { rows } = await runNamedQuery(store, 'impossible_travel', {
        org,
        since: '2026-01-05T00:00:00Z',
        until: '2026-01-06T00:00:00Z',
      });
      const found = rows.map((r) => ({ user: r['user'], from: r['prev_city'], to: r['city'] }));
      expect(found).toEqual(
        expect.arrayContaining([
          { user: along.parallel.login, from: 'Madrid', to: 'East of Madrid' },
          { user: along.meridian.login, from: 'Quito', to: 'South of Quito' },
        ]),
      );
      expect(found).toHaveLength(2); // not the user who stayed, nor the one a day on the way
    });
});
