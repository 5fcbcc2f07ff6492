/**
 * The bench's workload: N stream records shaped like production `<prefix>.logs`
 * records — value is one LogEvent's JSON (a fixture event with a fresh uuid and
 * `published`), key and `hooklog-org` name one of a few orgs, and the headers a
 * hook delivery carries. Built once per process and reused by every mode: each
 * mode writes into its own database, so reuse never meets deduplication.
 */
import { randomUUID } from 'node:crypto';
import { Header } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { validLogEvents } from '../../test/fixtures/index.js';

/** Events spread over this many orgs, as a multi-tenant deployment would see. */
export const ORGS = 20;

export interface Workload {
  readonly records: readonly StreamRecord[];
  /** Sum of value sizes, for MiB/s figures. */
  readonly bytes: number;
}

export function buildWorkload(n: number): Workload {
  const templates = validLogEvents();
  const start = Date.now() - n; // one event per millisecond, ending now
  const receivedAt = new Date().toISOString();
  const records: StreamRecord[] = [];
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const template = templates[i % templates.length]!;
    const org = `org${String(i % ORGS).padStart(2, '0')}`;
    const value = Buffer.from(JSON.stringify({ ...template, uuid: randomUUID(), published: new Date(start + i).toISOString() }));
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
  return { records, bytes };
}

/** Splits `records` into consecutive batches of at most `size`. */
export function batches<T>(records: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < records.length; i += size) out.push(records.slice(i, i + size));
  return out;
}
