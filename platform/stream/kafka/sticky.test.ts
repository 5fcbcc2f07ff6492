/**
 * The sticky assignment as a function, over seeded random memberships and
 * histories of leaves and joins: every partition assigned once, balanced,
 * deterministic, and moving no more partitions than balance forces — which for
 * a member leaving is only its own, and for one joining at most its share,
 * taken from the members holding the most. Plus what members send: garbage,
 * nothing (a previous release), stale and conflicting claims.
 */
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../test/support/random.js';
import { stickyMember } from './sticky-assigner.js';
import { assignSticky, decodeHoldings, encodeHoldings, type Holdings, type StickyMember } from './sticky.js';

const T = 'cursors';
type Owned = Map<string, number[]>;

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const one = (held: Owned): Map<string, Holdings> => new Map([...held].map(([id, ps]) => [id, new Map([[T, ps]])]));

/** Assigns topic T's `p` partitions to members holding `held` (a member with no entry is new). */
function assign(ids: readonly string[], p: number, held: Map<string, Holdings>): Owned {
  const members: StickyMember[] = ids.map((id) => ({ id, topics: [T], held: held.get(id) ?? null }));
  const out = assignSticky(members, new Map([[T, range(p)]]));
  return new Map([...out].map(([id, a]) => [id, a.get(T) ?? []]));
}

/** Every partition exactly once, to a listed member, and counts within one of each other. */
function expectBalanced(out: Owned, p: number): void {
  expect([...out.values()].flat().sort((a, b) => a - b)).toEqual(range(p));
  const sizes = [...out.values()].map((ps) => ps.length);
  expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
}

/** Partitions whose owner is not a member that held them. */
function moved(before: Owned, after: Owned): number {
  let n = 0;
  for (const [id, ps] of after) n += ps.filter((x) => !(before.get(id) ?? []).includes(x)).length;
  return n;
}

/**
 * The fewest moves any balanced assignment needs from non-overlapping holdings: each member keeps at most its quota
 * (floor, or ceil for `extra` of them), so the most kept is Σ min(held, floor) plus one for each of up to `extra`
 * members holding more than the floor.
 */
function fewestMoves(ids: readonly string[], p: number, before: Owned): number {
  const base = Math.floor(p / ids.length);
  const extra = p % ids.length;
  const held = ids.map((id) => (before.get(id) ?? []).length);
  const kept = held.reduce((s, h) => s + Math.min(h, base), 0) + Math.min(extra, held.filter((h) => h > base).length);
  return p - kept;
}

describe('sticky assignment over leave and join histories', () => {
  it('moves only what balance forces: a leaver only its own, a joiner at most its share from the fullest', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rnd = seededRandom(seed);
      const p = 1 + Math.floor(rnd() * 40);
      let next = 0;
      const newId = () => `m-${Math.floor(rnd() * 1e6)}-${next++}`;
      let ids = range(1 + Math.floor(rnd() * 6)).map(newId);
      let owned = assign(ids, p, new Map());
      expectBalanced(owned, p);
      for (let step = 0; step < 12; step++) {
        const leave = ids.length > 1 && rnd() < 0.5;
        const before = owned;
        let after: Owned;
        if (leave) {
          const gone = ids[Math.floor(rnd() * ids.length)]!;
          ids = ids.filter((id) => id !== gone);
          after = assign(ids, p, one(new Map([...before].filter(([id]) => id !== gone))));
          // Survivors keep everything they had; only the leaver's partitions move, spread evenly (balanced).
          for (const id of ids) expect(after.get(id)).toEqual(expect.arrayContaining(before.get(id)!));
          expect(moved(before, after)).toBe(before.get(gone)!.length);
        } else {
          const joiner = newId();
          ids = [...ids, joiner];
          after = assign(ids, p, one(before));
          const share = Math.ceil(p / ids.length);
          expect(after.get(joiner)!.length).toBeLessThanOrEqual(share);
          // The others only give, and only to the joiner; those who gave held at least as many as any who did not.
          const donors = ids.filter((id) => id !== joiner && after.get(id)!.length < before.get(id)!.length);
          for (const id of ids.filter((x) => x !== joiner))
            expect(before.get(id)).toEqual(expect.arrayContaining(after.get(id)!));
          const kept = ids.filter((id) => id !== joiner && !donors.includes(id));
          for (const d of donors)
            for (const k of kept) expect(before.get(d)!.length).toBeGreaterThanOrEqual(before.get(k)!.length);
          expect(moved(before, after)).toBe(after.get(joiner)!.length);
        }
        expectBalanced(after, p);
        expect(moved(before, after), `seed ${seed} step ${step}`).toBe(fewestMoves(ids, p, before));
        owned = after;
      }
    }
  });

  it('from any holdings (random, unbalanced, partly unknown): balanced and no more moves than balance forces', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rnd = seededRandom(1000 + seed);
      const p = 1 + Math.floor(rnd() * 30);
      const ids = range(1 + Math.floor(rnd() * 7)).map((i) => `x${i}-${Math.floor(rnd() * 1000)}`);
      // Each partition held by one random member, or by nobody.
      const before: Owned = new Map(ids.map((id) => [id, []]));
      for (const x of range(p)) if (rnd() < 0.8) before.get(ids[Math.floor(rnd() * ids.length)]!)!.push(x);
      const after = assign(ids, p, one(before));
      expectBalanced(after, p);
      expect(moved(before, after), `seed ${seed}`).toBe(fewestMoves(ids, p, before));
      // Stable: the same group again keeps everything.
      expect(assign(ids, p, one(after))).toEqual(after);
    }
  });

  it('is deterministic: the member order given does not change the answer', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const rnd = seededRandom(5000 + seed);
      const p = 1 + Math.floor(rnd() * 20);
      const members: StickyMember[] = range(1 + Math.floor(rnd() * 6)).map((i) => ({
        id: `d${i}`,
        topics: [T],
        held: rnd() < 0.3 ? null : new Map([[T, range(p).filter(() => rnd() < 0.4)]]),
      }));
      const partitions = new Map([[T, range(p)]]);
      const first = assignSticky(members, partitions);
      const shuffled = [...members].sort(() => rnd() - 0.5);
      expect(assignSticky(shuffled, partitions)).toEqual(first);
    }
  });

  it('settles overlapping claims (a rejoining member that was expelled) once each, for the claimant holding fewer', () => {
    // a was expelled while paused; b and c took its 2 and 5; a rejoins still claiming them.
    const held = new Map<string, Holdings>([
      ['a', new Map([[T, [2, 5]]])],
      ['b', new Map([[T, [0, 2, 3]]])],
      ['c', new Map([[T, [1, 4, 5]]])],
    ]);
    const out = assign(['a', 'b', 'c'], 6, held);
    expect(out).toEqual(
      new Map([
        ['a', [2, 5]],
        ['b', [0, 3]],
        ['c', [1, 4]],
      ]),
    );
  });

  it('ignores claims of partitions that do not exist and of topics the member does not read', () => {
    const members: StickyMember[] = [
      { id: 'a', topics: [T], held: new Map([[T, [0, 7, 99]]]) },
      { id: 'b', topics: [T, 'other'], held: new Map([['other', [0, 1]]]) },
    ];
    const out = assignSticky(
      members,
      new Map([
        [T, range(4)],
        ['other', range(2)],
      ]),
    );
    // a keeps 0 and gets its share; 7 and 99 are nobody's.
    expect(out.get('a')!.get(T)).toHaveLength(2);
    expect(out.get('a')!.get(T)).toContain(0);
    expect([...out.values()].flatMap((a) => a.get(T) ?? []).sort()).toEqual(range(4));
    // Only b reads `other`; a claim a does not make cannot give it there.
    expect(out.get('a')!.has('other')).toBe(false);
    expect(out.get('b')!.get('other')).toEqual([0, 1]);
  });

  it('balances several topics per topic, and evens the totals where the counts do not divide', () => {
    const members: StickyMember[] = ['a', 'b', 'c'].map((id) => ({ id, topics: ['t1', 't2'], held: null }));
    const out = assignSticky(
      members,
      new Map([
        ['t1', range(4)],
        ['t2', range(4)],
      ]),
    );
    const totals = [...out.values()].map((a) => [...a.values()].flat().length).sort();
    expect(totals).toEqual([2, 3, 3]);
    for (const t of ['t1', 't2']) {
      const sizes = [...out.values()].map((a) => a.get(t)?.length ?? 0);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
  });
});

describe('what members send', () => {
  it('round-trips holdings, sorted and without repeats', () => {
    const bytes = encodeHoldings(new Map([[T, [3, 1, 3]]]));
    expect(decodeHoldings(bytes)).toEqual({ held: new Map([[T, [1, 3]]]) });
  });

  it('reads nothing, never throwing, from empty, foreign or malformed userData', () => {
    expect(decodeHoldings(Buffer.alloc(0))).toEqual({ held: null, reason: null });
    const bad: Array<[string, Buffer]> = [
      ['not JSON', Buffer.from('\u0000\u0001garbage')],
      ['an array', Buffer.from('[1,2]')],
      ['another version', Buffer.from(JSON.stringify({ v: 2, held: { [T]: [0] } }))],
      ['negative partitions', Buffer.from(JSON.stringify({ v: 1, held: { [T]: [-1] } }))],
      ['fractions', Buffer.from(JSON.stringify({ v: 1, held: { [T]: [0.5] } }))],
      ['strings', Buffer.from(JSON.stringify({ v: 1, held: { [T]: ['0'] } }))],
      ['a held list', Buffer.from(JSON.stringify({ v: 1, held: [0] }))],
      ['oversized', Buffer.alloc(70_000, 0x20)],
    ];
    for (const [what, bytes] of bad) {
      const d = decodeHoldings(bytes);
      expect(d.held, what).toBeNull();
      expect('reason' in d && d.reason, what).toBeTruthy();
    }
    const rnd = seededRandom(7);
    for (let i = 0; i < 500; i++) {
      const bytes = Buffer.from(range(Math.floor(rnd() * 64)).map(() => Math.floor(rnd() * 256)));
      expect(() => decodeHoldings(bytes)).not.toThrow();
    }
  });

  it("assigns a previous release's member (no userData) as a newcomer, and garbage metadata as holding nothing", () => {
    const meta = (userData?: Buffer) =>
      AssignerProtocol.MemberMetadata.encode({ version: 0, topics: [T], userData: userData ?? Buffer.alloc(0) });
    const old = stickyMember({ memberId: 'old', memberMetadata: meta() });
    expect(old).toEqual({ id: 'old', topics: [T], held: null, problem: null });
    const junk = stickyMember({ memberId: 'junk', memberMetadata: Buffer.from([0xff, 0x01, 0x02]) });
    expect(junk.held).toBeNull();
    expect(junk.problem).toBeTruthy();
    const liar = stickyMember({ memberId: 'liar', memberMetadata: meta(Buffer.from('{"v":1,"held":{"cursors":7}}')) });
    expect(liar.held).toBeNull();
    expect(liar.problem).toMatch(/partition numbers/);
    const kept = stickyMember({ memberId: 'new', memberMetadata: meta(encodeHoldings(new Map([[T, [0, 1]]]))) });
    const out = assignSticky([old, junk, liar, kept], new Map([[T, range(8)]]));
    expect(out.get('new')!.get(T)).toEqual([0, 1]);
    expect([...out.values()].flatMap((a) => a.get(T) ?? []).sort()).toEqual(range(8));
    for (const a of out.values()) expect(a.get(T)).toHaveLength(2);
  });
});
