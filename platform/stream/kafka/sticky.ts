/**
 * Sticky assignment of a group's partitions: who keeps what when a member
 * leaves or joins (pure; the kafkajs adapter is sticky-assigner.ts).
 *
 * A partition that moves is a hand-over: the pollers of its orgs stop on one
 * instance and start on another after a claim and a read of its cursors, and
 * alerting restores its checkpoint there. kafkajs's round-robin assigner deals
 * the partitions out afresh at every rebalance, so one instance leaving moved
 * partitions between the instances that stayed too. Here each member says what
 * it holds (the group protocol's userData) and the leader keeps every holding
 * it can while staying balanced:
 *
 * - per topic, each member ends with floor(P/N) or ceil(P/N) partitions; the
 *   members already holding the most are the ones allowed the ceiling;
 * - a member keeps what it holds up to that quota; only the excess and what
 *   nobody holds (a leaver's, a new topic's) move, to the members below quota;
 * - so a member leaving moves only its own partitions, spread over the rest, and
 *   one joining takes at most ceil(P/N), from the members with the most.
 *
 * Everything is decided from sorted inputs (members by id, partitions by
 * number), so every leader computes the same answer. A member's userData is
 * another process's bytes: anything that does not decode to a valid holding is
 * treated as holding nothing (it is then assigned as a newcomer), and claims of
 * partitions that do not exist are ignored. Two members claiming one partition
 * (a member expelled while paused rejoins claiming what has since moved) is
 * settled for the claimant holding fewer, which is where balance would send it.
 */

/** What a member holds: topic → partitions. */
export type Holdings = ReadonlyMap<string, readonly number[]>;

export interface StickyMember {
  readonly id: string;
  /** Topics the member subscribes to; null when its metadata did not decode (it is offered every topic). */
  readonly topics: readonly string[] | null;
  /** What it says it holds; null when it said nothing usable. */
  readonly held: Holdings | null;
}

const USER_DATA_VERSION = 1;
/** Bounds what a leader parses of another member's bytes: far above 1024 partitions' numbers. */
const MAX_USER_DATA_BYTES = 64 * 1024;
const MAX_TOPIC_CHARS = 249;
const MAX_PARTITION = 1_000_000;

/** The userData of a member holding `held`: versioned JSON, small (partition numbers only). */
export function encodeHoldings(held: Holdings): Buffer {
  const out: Record<string, number[]> = {};
  for (const [topic, ps] of [...held].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    out[topic] = [...new Set(ps)].sort((a, b) => a - b);
  return Buffer.from(JSON.stringify({ v: USER_DATA_VERSION, held: out }));
}

export type DecodedHoldings = { readonly held: Holdings } | { readonly held: null; readonly reason: string | null };

/**
 * A member's userData as holdings. Empty (a member that holds nothing yet, or a previous release's) is
 * `{ held: null, reason: null }`; anything malformed is `held: null` with the reason. Never throws.
 */
export function decodeHoldings(bytes: Buffer | null | undefined): DecodedHoldings {
  if (!bytes || bytes.length === 0) return { held: null, reason: null };
  if (bytes.length > MAX_USER_DATA_BYTES)
    return { held: null, reason: `userData of ${bytes.length} bytes, over ${MAX_USER_DATA_BYTES}` };
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { held: null, reason: 'userData is not JSON' };
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return { held: null, reason: 'not an object' };
  const { v, held } = doc as { v?: unknown; held?: unknown };
  if (v !== USER_DATA_VERSION) return { held: null, reason: `unknown userData version ${JSON.stringify(v) ?? ''}` };
  if (typeof held !== 'object' || held === null || Array.isArray(held))
    return { held: null, reason: '"held" is not an object' };
  const out = new Map<string, number[]>();
  for (const [topic, ps] of Object.entries(held)) {
    if (topic.length === 0 || topic.length > MAX_TOPIC_CHARS)
      return { held: null, reason: 'a topic name out of bounds' };
    if (!Array.isArray(ps) || !ps.every((p) => Number.isInteger(p) && p >= 0 && p < MAX_PARTITION))
      return { held: null, reason: `partitions of one topic are not a list of partition numbers` };
    out.set(
      topic,
      [...new Set(ps as number[])].sort((a, b) => a - b),
    );
  }
  return { held: out };
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The assignment of every member (each listed, possibly with nothing) over `partitions` (topic → partition
 * numbers), keeping what members hold wherever balance allows.
 */
export function assignSticky(
  members: readonly StickyMember[],
  partitions: ReadonlyMap<string, readonly number[]>,
): Map<string, Map<string, number[]>> {
  const sorted = [...members].sort(byId);
  const result = new Map(sorted.map((m) => [m.id, new Map<string, number[]>()]));
  /** Partitions given so far across topics: breaks ties between equal members towards an even total. */
  const totals = new Map(sorted.map((m) => [m.id, 0]));
  for (const topic of [...partitions.keys()].sort()) {
    const eligible = sorted.filter((m) => m.topics === null || m.topics.includes(topic));
    if (eligible.length === 0) continue;
    const all = [...new Set(partitions.get(topic))].sort((a, b) => a - b);
    const exists = new Set(all);
    const claims = new Map(eligible.map((m) => [m.id, (m.held?.get(topic) ?? []).filter((p) => exists.has(p))]));
    const claimants = new Map<number, string[]>();
    for (const m of eligible) for (const p of claims.get(m.id)!) claimants.set(p, [...(claimants.get(p) ?? []), m.id]);
    const kept = new Map<string, number[]>(eligible.map((m) => [m.id, []]));
    const pool: number[] = [];
    for (const p of all) {
      const who = claimants.get(p);
      if (!who) {
        pool.push(p);
        continue;
      }
      const owner = who.reduce((best, id) => (claims.get(id)!.length < claims.get(best)!.length ? id : best));
      kept.get(owner)!.push(p);
    }
    const base = Math.floor(all.length / eligible.length);
    const extra = all.length % eligible.length;
    const order = [...eligible].sort(
      (a, b) => kept.get(b.id)!.length - kept.get(a.id)!.length || totals.get(a.id)! - totals.get(b.id)! || byId(a, b),
    );
    const quota = new Map(order.map((m, i) => [m.id, base + (i < extra ? 1 : 0)]));
    for (const m of eligible) {
      const mine = kept.get(m.id)!;
      // Sheds its highest partitions beyond its quota (any choice is as few moves; this one is deterministic).
      pool.push(...mine.splice(quota.get(m.id)!));
    }
    pool.sort((a, b) => a - b);
    for (const p of pool) {
      const to = eligible.reduce((best, m) =>
        quota.get(m.id)! - kept.get(m.id)!.length > quota.get(best.id)! - kept.get(best.id)!.length ? m : best,
      );
      kept.get(to.id)!.push(p);
    }
    for (const m of eligible) {
      const mine = kept.get(m.id)!.sort((a, b) => a - b);
      totals.set(m.id, totals.get(m.id)! + mine.length);
      if (mine.length > 0) result.get(m.id)!.set(topic, mine);
    }
  }
  return result;
}
