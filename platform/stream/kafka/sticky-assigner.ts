/**
 * The sticky assignment (sticky.ts) as a kafkajs partition assigner.
 *
 * No maintained kafkajs package offers one (kafkajs ships round robin only), so
 * it is ours. Each member sends what it holds in its group protocol's userData;
 * the leader, whoever it is, decodes every member's and assigns with
 * `assignSticky`.
 *
 * Members register it first and kafkajs's round robin second. The coordinator
 * picks a protocol every member supports, so a group that still has a member of
 * a release without this assigner (a rolling upgrade) runs round robin — as
 * that release did — and switches to sticky once the last such member has
 * left; the holdings members send then are whatever round robin gave them.
 */
import { AssignerProtocol, PartitionAssigners, type Assigner, type GroupMember, type PartitionAssigner } from 'kafkajs';
import type { Logger } from '../../log.js';
import { assignSticky, decodeHoldings, encodeHoldings, type Holdings, type StickyMember } from './sticky.js';

/** The protocol name members advertise; not Java's "sticky", whose userData differs. */
export const STICKY_PROTOCOL = 'HooklogSticky';

/** A member's view for the leader, from its group metadata; garbage becomes "holds nothing", with the reason. */
export function stickyMember(m: GroupMember): StickyMember & { readonly problem: string | null } {
  let meta: ReturnType<typeof AssignerProtocol.MemberMetadata.decode>;
  try {
    meta = AssignerProtocol.MemberMetadata.decode(m.memberMetadata);
  } catch {
    meta = null;
  }
  if (!meta || !Array.isArray(meta.topics))
    return { id: m.memberId, topics: null, held: null, problem: 'group metadata does not decode' };
  const d = decodeHoldings(meta.userData);
  return { id: m.memberId, topics: meta.topics, held: d.held, problem: d.held ? null : d.reason };
}

/**
 * The assigner, for kafkajs's `partitionAssigners` (first; round robin after it). `holdings` is read at each
 * join: what this member was last given (the supervisor keeps it across a replaced consumer).
 */
export function stickyAssigner(holdings: () => Holdings, log: Logger): PartitionAssigner {
  return ({ cluster, groupId }) => {
    const assigner: Assigner = {
      name: STICKY_PROTOCOL,
      version: 0,
      async assign({ members, topics }) {
        const view = members.map(stickyMember);
        for (const m of view)
          if (m.problem) log.warn({ group: groupId, member: m.id, problem: m.problem }, 'sticky_member_data_ignored');
        const partitions = new Map(
          topics.map((t) => [t, cluster.findTopicPartitionMetadata(t).map((p) => p.partitionId)]),
        );
        const result = assignSticky(view, partitions);
        let moved = 0;
        for (const m of view)
          for (const [topic, ps] of result.get(m.id)!) {
            const had = m.held?.get(topic) ?? [];
            moved += ps.filter((p) => !had.includes(p)).length;
          }
        log.info({ group: groupId, members: view.length, moved }, 'sticky_assignment');
        return [...result].map(([memberId, a]) => ({
          memberId,
          memberAssignment: AssignerProtocol.MemberAssignment.encode({
            version: 0,
            assignment: Object.fromEntries(a),
            userData: Buffer.alloc(0),
          }),
        }));
      },
      protocol({ topics }) {
        return {
          name: STICKY_PROTOCOL,
          metadata: AssignerProtocol.MemberMetadata.encode({
            version: 0,
            topics,
            userData: encodeHoldings(holdings()),
          }),
        };
      },
    };
    return assigner;
  };
}

/** Sticky first, round robin for groups that still have a member without it. */
export function groupAssigners(holdings: () => Holdings, log: Logger): PartitionAssigner[] {
  return [stickyAssigner(holdings, log), PartitionAssigners.roundRobin];
}
