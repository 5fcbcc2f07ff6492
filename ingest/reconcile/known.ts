/**
 * "Is this event stored already?" for reconcile mode and backfill, asked of
 * the `arrivals` table (migration 010) by org, uuid and a published range
 * (the range lets the sorting key prune to the window's parts).
 */
import type { Store } from '../../platform/store/index.js';
import type { KnownLookup } from './reconciler.js';

export function knownInStore(store: Store, table = 'arrivals'): KnownLookup {
  return async (org, uuids, fromMs, toMs) => {
    if (uuids.length === 0) return new Set();
    const rows = await store.query<{ uuid: string }>(
      `SELECT DISTINCT uuid FROM ${store.database}.${table}
       WHERE org = {org:String} AND published >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
         AND published <= fromUnixTimestamp64Milli({to:Int64}, 'UTC') AND uuid IN {uuids:Array(String)}`,
      { org, from: fromMs, to: toMs, uuids: [...uuids] },
    );
    return new Set(rows.map((r) => r.uuid));
  };
}
