/**
 * The embedded stream's small mutable state, kept as records in internal topics
 * of the same log so it is exactly as durable as the data: topic metadata in
 * `__topics`, committed positions in `__offsets`. Replay applies them in log
 * order, last value wins; every new segment restates them (log.ts), so
 * retention never takes them away.
 */
import { HooklogError } from '../../errors.js';
import type { TopicSpec } from '../types.js';
import type { DecodedSection, SectionInput } from './frame.js';

export const TOPICS_TOPIC = '__topics';
export const OFFSETS_TOPIC = '__offsets';

/** Kafka's rule for topic names, so a name valid here is valid there. */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

/** Throws RECORD_INVALID unless `name` is a legal user topic name (internal `__` names are reserved). */
export function checkTopicName(name: string): void {
  if (!TOPIC_NAME.test(name) || name.startsWith('__')) {
    throw new HooklogError(
      'RECORD_INVALID',
      `invalid topic name ${JSON.stringify(name)}: use 1-249 of [a-zA-Z0-9._-], not starting with "__"`,
    );
  }
}

const offsetKey = (group: string, topic: string, partition: number) => JSON.stringify([group, topic, partition]);

export class StreamState {
  readonly #topics = new Map<string, TopicSpec>();
  /** `[group, topic]` as JSON -> partition -> committed (next) offset. */
  readonly #offsets = new Map<string, Map<number, number>>();

  /** Applies an internal topic's records, in log order. Throws on records this version cannot read. */
  apply(section: DecodedSection): void {
    for (const r of section.records ?? []) {
      if (r.key === null) throw new Error(`keyless record in ${section.topic}`);
      if (section.topic === TOPICS_TOPIC) {
        const spec = JSON.parse(r.value.toString('utf8')) as { partitions?: unknown; compacted?: unknown };
        if (!Number.isInteger(spec.partitions) || (spec.partitions as number) < 1)
          throw new Error(`bad topic record for ${r.key}`);
        this.#topics.set(r.key, {
          name: r.key,
          partitions: spec.partitions as number,
          compacted: spec.compacted === true,
        });
      } else if (section.topic === OFFSETS_TOPIC) {
        const [group, topic, partition] = JSON.parse(r.key) as [string, string, number];
        const key = JSON.stringify([group, topic]);
        if (r.value.length === 0) {
          // A tombstone: the group was forgotten (it no longer holds retention back).
          const m = this.#offsets.get(key);
          m?.delete(partition);
          if (m?.size === 0) this.#offsets.delete(key);
          continue;
        }
        const next = Number(r.value.toString('utf8'));
        if (!Number.isSafeInteger(next) || next < 0) throw new Error(`bad offset record ${r.key}`);
        let m = this.#offsets.get(key);
        if (!m) this.#offsets.set(key, (m = new Map()));
        m.set(partition, next);
      }
    }
  }

  topic(name: string): TopicSpec | undefined {
    return this.#topics.get(name);
  }

  topics(): Iterable<TopicSpec> {
    return this.#topics.values();
  }

  /** A copy of the group's committed positions in `topic`. */
  committed(topic: string, group: string): Map<number, number> {
    return new Map(this.#offsets.get(JSON.stringify([group, topic])));
  }

  /** Every group with a committed position in `topic`, with those positions. */
  groupsOf(topic: string): Array<[group: string, committed: ReadonlyMap<number, number>]> {
    const out: Array<[string, ReadonlyMap<number, number>]> = [];
    for (const [key, parts] of this.#offsets) {
      const [group, t] = JSON.parse(key) as [string, string];
      if (t === topic) out.push([group, parts]);
    }
    return out;
  }

  /** Tombstones for the group's positions in `topic`. */
  static forgetWrites(group: string, topic: string, partitions: number, now = Date.now()): SectionInput {
    const records = Array.from({ length: partitions }, (_, p) => ({
      key: offsetKey(group, topic, p),
      value: Buffer.alloc(0),
      headers: {},
      timestamp: now,
    }));
    return { topic: OFFSETS_TOPIC, partition: 0, records };
  }

  static topicWrite(spec: TopicSpec, now = Date.now()): SectionInput {
    const value = Buffer.from(JSON.stringify({ partitions: spec.partitions, compacted: spec.compacted === true }));
    return { topic: TOPICS_TOPIC, partition: 0, records: [{ key: spec.name, value, headers: {}, timestamp: now }] };
  }

  static offsetWrite(group: string, topic: string, partition: number, next: number, now = Date.now()): SectionInput {
    const record = {
      key: offsetKey(group, topic, partition),
      value: Buffer.from(String(next)),
      headers: {},
      timestamp: now,
    };
    return { topic: OFFSETS_TOPIC, partition: 0, records: [record] };
  }

  /** Every topic and committed position as records: what a new segment restates. */
  snapshot(now = Date.now()): SectionInput[] {
    const out = [...this.#topics.values()].map((spec) => StreamState.topicWrite(spec, now));
    for (const [key, parts] of this.#offsets) {
      const [group, topic] = JSON.parse(key) as [string, string];
      for (const [partition, next] of parts) out.push(StreamState.offsetWrite(group, topic, partition, next, now));
    }
    return out;
  }
}
