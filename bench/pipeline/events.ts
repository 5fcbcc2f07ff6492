/**
 * The bench's workload: N stream records shaped like production `<prefix>.logs`
 * records — value is one LogEvent's JSON, key and `hooklog-org` name one of a
 * few orgs, and the headers a hook delivery carries. The events are generated
 * (bench/analytics/generate.ts: full LogEvents with actor, client, geography,
 * securityContext, transaction, target; about 1.6 KiB each), deterministic for
 * a seed, so the bench needs nothing outside the repo. Built once per process
 * and reused by every mode: each mode writes into its own database, so reuse
 * never meets deduplication.
 */
import { Header } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { backgroundEvents, resetUuids } from '../analytics/generate.js';

/** Events spread over this many orgs, as a multi-tenant deployment would see. */
export const ORGS = 20;
const USERS_PER_ORG = 100;

export interface Workload {
  readonly records: readonly StreamRecord[];
  /** Sum of value sizes, for MiB/s figures. */
  readonly bytes: number;
}

export function buildWorkload(n: number, seed = 1): Workload {
  resetUuids(seed);
  const perUser = Math.ceil(n / (ORGS * USERS_PER_ORG));
  // One day ending now: every `published` is recent, as hook deliveries are.
  const start = new Date(Date.now() - 86_400_000);
  const receivedAt = new Date().toISOString();
  const records: StreamRecord[] = [];
  let bytes = 0;
  const opts = { orgs: ORGS, usersPerOrg: USERS_PER_ORG, days: 1, eventsPerUserPerDay: perUser, start, seed };
  for (const chunk of backgroundEvents(opts)) {
    for (const { org, event } of chunk) {
      if (records.length === n) break;
      const i = records.length;
      const value = Buffer.from(JSON.stringify(event));
      bytes += value.length;
      records.push({
        key: org,
        value,
        headers: {
          [Header.org]: org,
          [Header.source]: 'hook',
          [Header.hookId]: 'bench-hook',
          // A delivery carries many events; 50 a delivery is a typical hook batch.
          [Header.deliveryId]: `bench-delivery-${Math.floor(i / 50)}`,
          [Header.receivedAt]: receivedAt,
        },
      });
    }
  }
  if (records.length !== n) throw new Error(`generated ${records.length} events, wanted ${n}`);
  return { records, bytes };
}

/** Splits `records` into consecutive batches of at most `size`. */
export function batches<T>(records: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < records.length; i += size) out.push(records.slice(i, i + size));
  return out;
}
