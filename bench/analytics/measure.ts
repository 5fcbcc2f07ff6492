/** Store-side measurements: on-disk bytes per table and column, and query latency. */
import type { Store } from '../../platform/store/index.js';
import { runNamedQuery } from '../../analytics/run.js';

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Active parts' bytes on disk and rows of one table. */
export async function tableBytes(store: Store, table: string): Promise<{ bytes: number; rows: number; parts: number }> {
  const [r] = await store.query<{ b: string; r: string; p: string }>(
    'SELECT sum(bytes_on_disk) AS b, sum(rows) AS r, count() AS p FROM system.parts WHERE database = {db:String} AND table = {t:String} AND active',
    { db: store.database, t: table },
  );
  return { bytes: Number(r!.b), rows: Number(r!.r), parts: Number(r!.p) };
}

/** Compressed bytes per column, largest first. */
export async function columnBytes(
  store: Store,
  table: string,
): Promise<Array<{ name: string; compressed: number; uncompressed: number }>> {
  const rows = await store.query<{ name: string; c: string; u: string }>(
    'SELECT name, data_compressed_bytes AS c, data_uncompressed_bytes AS u FROM system.columns WHERE database = {db:String} AND table = {t:String} ORDER BY data_compressed_bytes DESC',
    { db: store.database, t: table },
  );
  return rows.map((r) => ({ name: r.name, compressed: Number(r.c), uncompressed: Number(r.u) }));
}

/** Median wall time (ms) of `runs` runs after one warm-up. */
export async function latency(
  run: () => Promise<unknown>,
  runs: number,
): Promise<{ median: number; min: number; max: number }> {
  await run();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  return { median: median(times), min: Math.min(...times), max: Math.max(...times) };
}

export async function queryLatency(store: Store, name: string, params: Record<string, string>, runs: number) {
  let rows = 0;
  const l = await latency(async () => {
    rows = (await runNamedQuery(store, name, params)).rows.length;
  }, runs);
  return { ...l, rows };
}
