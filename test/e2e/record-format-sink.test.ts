/**
 * A record of a format this release does not read, on the logs topic beside records it does, through the real
 * sink (Kafka, the built pipeline): the readable ones are stored as events, the newer one is not read as an event
 * but lands in the deadletter table with its raw bytes, its place on the topic and why (RECORD_FORMAT_UNKNOWN).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { silentLogger } from '../../platform/log.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { kafkaBrokerList, kafkaBrokers } from '../kafka/inject.js';
import { startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { hookEvent } from '../support/instances.js';
import { waitFor } from '../support/wait.js';

let daemon: Daemon | undefined;
let raw: Stream | undefined;
afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  await raw?.close();
});

describe('record formats through the sink', () => {
  it('stores the previous and current formats as events and dead-letters a newer one whole', async () => {
    const inst = writeTestConfig({ kafkaBrokers: kafkaBrokers() });
    const parsed = parse(readFileSync(inst.configPath, 'utf8')) as {
      data_dir: string;
      stream: { topic_prefix: string };
    };
    daemon = await startDaemon(['--config', inst.configPath]);
    raw = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: 'format-writer', logger: silentLogger() });
    const [unversioned, current, newer] = [hookEvent(1), hookEvent(2), hookEvent(3)];
    const headers = { [Header.org]: inst.org, [Header.source]: 'hook', [Header.receivedAt]: new Date().toISOString() };
    const newerBytes = Buffer.from(JSON.stringify({ v: 2, event: newer }));
    await raw.append(topicNames(parsed.stream.topic_prefix).logs, [
      { key: inst.org, value: Buffer.from(JSON.stringify(unversioned)), headers },
      { key: inst.org, value: newerBytes, headers: { ...headers, [Header.format]: '2' } },
      { key: inst.org, value: Buffer.from(JSON.stringify(current)), headers: { ...headers, [Header.format]: '1' } },
    ]);
    const sql = async (q: string) => (await queryViaAdminSocket(parsed.data_dir, q))?.rows ?? [];
    const letters = await waitFor(() => sql(`SELECT origin, reason, topic, offset, raw FROM deadletter FINAL`), {
      until: (rows) => rows.length >= 1,
      timeoutMs: 30_000,
      what: 'the dead letter',
    });
    const events = await waitFor(() => sql(`SELECT uuid FROM events FINAL WHERE org = '${inst.org}' ORDER BY uuid`), {
      until: (rows) => rows.length >= 2,
      timeoutMs: 30_000,
      what: 'the two readable events',
    });
    expect(events.map((r) => r.uuid)).toEqual([unversioned.uuid, current.uuid].sort());
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      topic: topicNames(parsed.stream.topic_prefix).logs,
      raw: newerBytes.toString(),
    });
    expect(String(letters[0]!.reason)).toContain('RECORD_FORMAT_UNKNOWN: logs record of format 2');
    expect(String(letters[0]!.origin)).toContain('stream-formats');
  }, 120_000);
});
