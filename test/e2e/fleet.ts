/**
 * Shared plumbing of the fleet tests: several simulated orgs, each hooklog
 * instance polling with its own token (so the org can tell who asked), and the
 * checks the orgs and the topics must pass: no two instances' requests for one
 * (org, API) overlapping in time, and no cursor that repeats or goes back.
 */
import { partitionFor } from '../../platform/stream/embedded/partitioner.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { SYNC_KEY } from '../../platform/stream/kafka/table.js';
import { history, logEvent, SimulatedOrg } from '../simulated-org/index.js';

export interface FleetOrg {
  readonly id: string;
  readonly sim: SimulatedOrg;
}

/**
 * `n` orgs whose System Log cursor keys spread over every one of `partitions`
 * cursor partitions (round-robin), each with a day of history, answering the
 * given tokens. Their rate limits allow 10 requests a second per API, in
 * windows of `windowMs` (default a minute, as the service's).
 */
export async function startOrgs(
  n: number,
  partitions: number,
  tokens: readonly string[],
  eventsEach = 300,
  windowMs = 60_000,
): Promise<FleetOrg[]> {
  const suffix = Math.random().toString(36).slice(2, 7);
  const ids: string[] = [];
  for (let i = 0; ids.length < n; i++) {
    const id = `org${i}-${suffix}`;
    if (partitionFor(`system-log:${id}`, partitions) === ids.length % partitions) ids.push(id);
  }
  const now = Date.now();
  return Promise.all(
    ids.map(async (id, i) => {
      const sim = await SimulatedOrg.start({
        auth: { ssws: [...tokens] },
        rateLimit: { logs: { limit: windowMs / 100, windowMs }, events: { limit: windowMs / 100, windowMs } },
      });
      sim.addLogEvents(history({ count: eventsEach, days: 1, now, kind: 'log', seed: i + 1 }));
      return { id, sim };
    }),
  );
}

/** Adds `k` live events to every org (published just now). */
export function addLive(orgs: readonly FleetOrg[], k: number, seq: { n: number }): void {
  const t = Date.now();
  for (const o of orgs)
    o.sim.addLogEvents(Array.from({ length: k }, (_, i) => ({ event: logEvent(seq.n++), published: t - i * 10 })));
}

/** The `orgs:` entry of each org, with the token taken from ${ORG_TOKEN} (one per instance). */
export function orgsConfig(
  orgs: readonly FleetOrg[],
  pollIntervalMs = 300,
  requestTimeoutMs = 5_000,
): Array<Record<string, unknown>> {
  return orgs.map((o) => ({
    id: o.id,
    base_url: o.sim.url,
    auth: { ssws: { token: '${ORG_TOKEN}' } },
    request_timeout_ms: requestTimeoutMs,
    system_log: { start: '2d', poll_interval_ms: pollIntervalMs, rate_limit_share: 0.5 },
  }));
}

/**
 * Requests of different instances (tokens) to one org's API overlapping in
 * time, among those that started at or after `fromMs`. Each is described.
 */
export function overlaps(orgs: readonly FleetOrg[], fromMs: number): string[] {
  const out: string[] = [];
  for (const o of orgs) {
    for (const path of ['/api/v1/logs', '/api/v1/events']) {
      const reqs = o.sim.requests
        .filter((r) => r.path === path && r.client && (r.doneAt ?? Infinity) >= fromMs)
        .sort((a, b) => a.at - b.at);
      for (let i = 0; i < reqs.length; i++) {
        for (let j = i + 1; j < reqs.length && reqs[j]!.at <= (reqs[i]!.doneAt ?? Infinity); j++) {
          if (reqs[j]!.client !== reqs[i]!.client && reqs[j]!.at >= fromMs) {
            out.push(
              `${o.id}${path}: ${reqs[i]!.client}@${reqs[i]!.at}-${reqs[i]!.doneAt} overlaps ${reqs[j]!.client}@${reqs[j]!.at}`,
            );
          }
        }
      }
    }
  }
  return out;
}

/** The simulated org's `after` token of a System Log next link: `<persistedAt>_<seq>`, increasing. */
function afterSeq(next: string): number {
  const after = new URL(next).searchParams.get('after');
  const m = after ? /^\d+_(\d+)$/.exec(after) : null;
  return m ? Number(m[1]) : -1;
}

/**
 * Cursor records (in offset order per partition) whose position repeats or goes
 * back compared with the previous record of the same key: two writers, or a
 * stale one. A first page (no after) counts as -1.
 */
export function cursorViolations(records: readonly ConsumedRecord[]): string[] {
  const last = new Map<string, { seq: number; offset: number }>();
  const out: string[] = [];
  for (const r of [...records].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    // Sync records (table.ts) mark a reader's place; they carry no cursor.
    if (r.key === null || r.key === SYNC_KEY) continue;
    const { next } = JSON.parse(r.value.toString('utf8')) as { next: string };
    const seq = afterSeq(next);
    const prev = last.get(r.key);
    if (prev && seq <= prev.seq)
      out.push(
        `${r.key}: cursor at offset ${r.offset} (after seq ${seq}) does not move past offset ${prev.offset} (seq ${prev.seq})`,
      );
    last.set(r.key, { seq, offset: r.offset });
  }
  return out;
}
