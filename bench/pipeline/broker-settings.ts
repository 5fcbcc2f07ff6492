/**
 * The broker settings a drain's figures depend on, pinned when the bench starts its own broker and read
 * back (and printed) whichever broker it uses. Each is one that the Kafka engine and hooklog's sink may
 * pay differently: the engine joins a fresh consumer group in every run, and the broker holds a new
 * group's first join for `group.initial.rebalance.delay.ms` (3 s by Kafka's default, 0 on the test
 * brokers); the session time-out bounds refuse a client's requested session; the message size limits
 * decide how much one fetch may bring.
 */
import kafkajs, { type Admin } from 'kafkajs';

// kafkajs is CommonJS and Node's ESM loader does not see this export by name.
const { ConfigResourceTypes } = kafkajs;

/** Kafka's own defaults for what the bench pins (the broker a user installs). */
export const KAFKA_DEFAULTS: Readonly<Record<string, string>> = {
  'group.initial.rebalance.delay.ms': '3000',
};

/** What the bench's own broker runs with unless told `--broker-defaults` (the test set-up's value). */
export const BENCH_BROKER: Readonly<Record<string, string>> = {
  'group.initial.rebalance.delay.ms': '0',
};

/** Read back and printed beside every result. */
const REPORTED = [
  'group.initial.rebalance.delay.ms',
  'group.min.session.timeout.ms',
  'group.max.session.timeout.ms',
  'message.max.bytes',
  'replica.fetch.max.bytes',
  'compression.type',
  'num.io.threads',
  'num.network.threads',
] as const;

/** `name=value` for every reported setting, as the broker states it now (`(default)` when it is Kafka's). */
export async function describeBroker(admin: Admin): Promise<string> {
  const { brokers } = await admin.describeCluster();
  const lines: string[] = [];
  for (const b of brokers) {
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.BROKER, name: String(b.nodeId), configNames: [...REPORTED] }],
    });
    const entries = resources.flatMap((r) => r.configEntries);
    const byName = new Map(entries.map((e) => [e.configName, e]));
    const settings = REPORTED.map((name) => {
      const e = byName.get(name);
      return e ? `${name}=${e.configValue}${e.isDefault ? ' (default)' : ''}` : `${name}=?`;
    });
    lines.push(`broker ${b.nodeId} at ${b.host}:${b.port}: ${settings.join(', ')}`);
  }
  return lines.join('\n');
}
