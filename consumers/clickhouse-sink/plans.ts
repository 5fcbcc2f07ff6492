/**
 * The sink's batch plans in ClickHouse (`{db}.sink_batches`, migration 007):
 * the durable record that makes a replay cut the same batches (see
 * PartitionWorker and ConsumeOptions.batchPlans). Kept in the store the
 * batches go to, so the sink depends on nothing else being up; one small
 * synchronous, fsynced insert per batch.
 *
 * Why a record is needed at all: batches are cut by size and by time, and
 * time depends on when records arrived. Replayed after a crash, the records
 * are all there at once and would be cut by size alone, into different
 * ranges with different dedup tokens, and ClickHouse would keep both copies.
 */
import { isRetriable } from '../../platform/errors.js';
import { RetryPolicies, retry, type RetryPolicy } from '../../platform/retry.js';
import type { Store } from '../../platform/store/index.js';
import type { BatchPlans, BatchRange } from '../../platform/stream/types.js';

export const PLANS_TABLE = 'sink_batches';

export interface PlanRow {
  consumer_group: string;
  topic: string;
  partition: number;
  first_offset: number;
  last_offset: number;
}

export interface PlanStoreOptions {
  readonly store: Store;
  readonly group: string;
  readonly topic: string;
  /** Every failed attempt, retried or not. */
  readonly onError: (err: unknown, op: 'load' | 'record', partition: number) => void;
  /** Retriable failures (store down) are retried with this, like inserts. Default RetryPolicies.sink. */
  readonly retryPolicy?: RetryPolicy;
  /** Aborts retries (the sink is stopping). */
  readonly signal?: AbortSignal;
  readonly table?: string;
}

export function clickHouseBatchPlans(o: PlanStoreOptions): BatchPlans {
  const { store, group, topic, onError } = o;
  const table = o.table ?? PLANS_TABLE;
  const withRetry = <T>(op: 'load' | 'record', partition: number, fn: () => Promise<T>): Promise<T> =>
    retry(fn, {
      policy: o.retryPolicy ?? RetryPolicies.sink,
      retriable: isRetriable,
      ...(o.signal ? { signal: o.signal } : {}),
      onRetry: (err) => onError(err, op, partition),
    }).catch((err: unknown) => {
      onError(err, op, partition);
      throw err;
    });
  return {
    load(partition, fromOffset) {
      return withRetry('load', partition, async () => {
        // The earliest range recorded per first offset (see the migration on why not the latest).
        const rows = await store.query<{ first_offset: string; planned_last: string }>(
          `SELECT first_offset, argMin(last_offset, planned_at) AS planned_last FROM ${store.database}.${table}
           WHERE consumer_group = {group:String} AND topic = {topic:String} AND partition = {partition:UInt32}
             AND last_offset >= {from:UInt64}
           GROUP BY first_offset ORDER BY first_offset`,
          { group, topic, partition, from: fromOffset },
        );
        return rows.map((r): BatchRange => ({ first: Number(r.first_offset), last: Number(r.planned_last) }));
      });
    },
    record(partition, range) {
      const row: PlanRow = {
        consumer_group: group,
        topic,
        partition,
        first_offset: range.first,
        last_offset: range.last,
      };
      return withRetry('record', partition, () => store.insertJson(table, [row]));
    },
  };
}
