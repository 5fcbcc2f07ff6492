/**
 * A flood under kill -9, in a fleet: 5,000 failed sign-ins of one user within
 * the rule's dedup period, evaluated by two `hooklog alert` processes (real
 * children, one group on the real broker; one also writes the alerts table in
 * embedded ClickHouse) while each is killed with SIGKILL mid-stream and
 * restarted. Afterwards: one alert with count 5,000 in the table, one call at
 * a real HTTP receiver, and on the alerts topic each revision of the alert
 * exactly once (a crash repeats a delivery, never a decision).
 *
 * The kills come after the webhook output committed its one post: a kill
 * between a post and its commit would post it again with the same
 * X-Hooklog-Alert-Id (README, "Time, lateness, restarts"), which is the
 * receiver's to drop and not what this test is about.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { silentLogger } from '../../platform/log.js';
import { openStore } from '../../platform/store/index.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream, StreamRecord } from '../../platform/stream/types.js';
import { kafkaBrokers } from '../../test/kafka/inject.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import type { Alert } from './alert.js';
import { alertingTopics } from './index.js';
import { spawnAlert } from '../../test/support/alert-process.js';

const log = silentLogger();
const dir = mkdtempSync(join(tmpdir(), 'hooklog-alert-kill-grouped-'));
const FLOOD = 5000;
const T0 = Date.parse('2026-03-01T10:00:00Z');
let stream: Stream;
let receiver: Server;
const posts: Array<{ id: string; body: Alert }> = [];

beforeAll(async () => {
  stream = await openKafkaStream({
    brokers: kafkaBrokers().split(','),
    clientId: randomName('alert-kill-grouped'),
    logger: log,
  });
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      posts.push({ id: String(req.headers['x-hooklog-alert-id']), body: JSON.parse(body) as Alert });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await stream?.close();
  await new Promise((r) => receiver?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** The flood: failed sign-ins of one user, 500 ms apart (41 min), and a success now and then that no rule takes. */
function flood(org: string): StreamRecord[] {
  return Array.from({ length: FLOOD + FLOOD / 10 }, (_, i) => {
    const ev = {
      uuid: `${org}-${i}`,
      published: new Date(T0 + i * 500).toISOString(),
      eventType: 'user.session.start',
      outcome: { result: i % 11 === 10 ? 'SUCCESS' : 'FAILURE' },
      actor: { alternateId: 'alice@acme.example', type: 'User' },
      client: { ipAddress: `203.0.113.${i % 200}` },
    };
    return {
      key: org,
      value: Buffer.from(JSON.stringify(ev)),
      headers: { [Header.org]: org, [Header.source]: 'hook' },
    };
  });
}

const sum = (m: Map<number, number>) => [...m.values()].reduce((a, b) => a + b, 0);

describe('a grouped flood under kill -9 in a two-instance fleet (Kafka, embedded ClickHouse)', () => {
  it('one alert with count 5,000, one webhook call, every revision once', { timeout: 420_000 }, async () => {
    const prefix = randomName('alg');
    const group = randomName('alerting');
    const database = randomName('alg');
    const t = topicNames(prefix);
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const config = (clickhouse: boolean) => ({
      data_dir: join(dir, 'data'),
      log_level: 'warn',
      store: { database },
      stream: {
        topic_prefix: prefix,
        partitions: 3,
        kafka: { brokers: kafkaBrokers().split(','), client_id: randomName('hl'), session_timeout_ms: 6_000 },
      },
      alerting: {
        group,
        rules: [
          {
            id: 'fail',
            title: 'Sign-in failures for {{ actor.alternateId }}',
            detection: 'eventType eq "user.session.start" and outcome.result eq "FAILURE"',
            group_by: ['actor.alternateId'],
            dedup_period: '1h',
          },
        ],
        clickhouse,
        webhooks: [{ name: 'ops', url }],
        // Small batches: many transactions (over a hundred revisions of the alert, each an atomic append with the
        // checkpoint), so the kills land mid-flood, between and inside them. 20 made some 280 and took half as long
        // again to prove the same: each revision once is checked however many there are, and kills[1] below holds
        // the kills inside the flood.
        max_batch_records: 50,
        max_batch_wait_ms: 20,
        allowed_lateness_ms: 60_000,
      },
    });
    const base = config(true);
    // The same fleet (one client id, so one claim per partition): instance A writes the table, B does not.
    const paths = { a: join(dir, `${prefix}-a.yaml`), b: join(dir, `${prefix}-b.yaml`) };
    writeFileSync(paths.a, stringify(base));
    writeFileSync(paths.b, stringify({ ...base, alerting: { ...base.alerting, clickhouse: false } }));
    await stream.ensureTopics([{ name: t.logs, partitions: 3 }]);
    const records = flood('acme');
    for (let i = 0; i < records.length; i += 500) await stream.append(t.logs, records.slice(i, i + 500));
    const alerts = alertingTopics(prefix).alerts;
    const evaluated = async () => sum(await stream.committedOffsets(t.logs, group));
    const posted = async () => sum(await stream.committedOffsets(alerts, `${group}.webhook.ops`));

    const fleet = { a: spawnAlert(paths.a), b: spawnAlert(paths.b) };
    const output = () => `A: ${fleet.a.output().slice(-1500)}\nB: ${fleet.b.output().slice(-1500)}`;
    // The alert opened and its one post committed, the flood still going: kill A, then (once the fleet has gone on
    // without it) B, restarting each.
    await waitFor(async () => ({ posts: posts.length, posted: await posted(), evaluated: await evaluated() }), {
      until: (n) => n.posts >= 1 && n.posted >= 1 && n.evaluated >= 1000,
      timeoutMs: 120_000,
      intervalMs: 10,
      what: 'the opening post and progress',
      seen: output,
    });
    const kills: number[] = [];
    for (const who of ['a', 'b'] as const) {
      const before = await evaluated();
      if (who === 'b')
        await waitFor(async () => await evaluated(), {
          until: (n) => n >= before + 500,
          timeoutMs: 120_000,
          intervalMs: 10,
          what: 'progress before killing B',
          seen: output,
        });
      fleet[who].child.kill('SIGKILL');
      await fleet[who].exited;
      kills.push(await evaluated());
      fleet[who] = spawnAlert(paths[who]);
    }
    expect(kills[1]!).toBeLessThan(records.length); // both kills landed mid-flood

    try {
      await waitFor(async () => await evaluated(), {
        until: (v) => v === records.length,
        timeoutMs: 180_000,
        what: 'all evaluated',
        seen: output,
      });
      const end = await stream.latestOffsets(alerts);
      await waitFor(async () => sum(await stream.committedOffsets(alerts, `${group}.clickhouse`)), {
        until: (v) => v >= sum(end),
        timeoutMs: 120_000,
        what: 'the alerts table written',
        seen: output,
      });
      await waitFor(async () => await posted(), { until: (v) => v >= sum(end), what: 'the webhook output caught up' });
    } finally {
      for (const p of Object.values(fleet)) p.child.kill('SIGTERM');
      await Promise.all(Object.values(fleet).map((p) => p.exited));
    }

    // The alerts topic: one alert, each revision once, in order.
    const seen: Alert[] = [];
    const readerGroup = randomName('reader');
    const reader = await stream.consume({
      topic: alerts,
      group: readerGroup,
      maxBatchWaitMs: 20,
      handler: async (b) => void seen.push(...b.records.map((r) => JSON.parse(r.value.toString('utf8')) as Alert)),
    });
    try {
      const end = sum(await stream.latestOffsets(alerts));
      await waitFor(async () => sum(await stream.committedOffsets(alerts, readerGroup)), {
        until: (v) => v >= end,
        timeoutMs: 60_000,
        what: `reading the alerts (${seen.length})`,
      });
    } finally {
      await reader.stop();
    }
    expect(new Set(seen.map((a) => a.alert_id)).size).toBe(1);
    expect(seen.map((a) => a.revision)).toEqual(seen.map((_, i) => i));
    expect(seen.at(-1)).toMatchObject({
      count: FLOOD,
      findings: FLOOD,
      rule_title: 'Sign-in failures for alice@acme.example',
    });

    // One webhook call: the opening, as it was when it opened.
    expect(posts.map((p) => [p.id, p.body.revision, p.body.count])).toEqual([[seen[0]!.alert_id, 0, 1]]);

    // The alerts table: one row, the last revision.
    const store = openStore({ database, dataDir: join(dir, 'data'), logger: log });
    try {
      const rows = await store.query<Record<string, unknown>>(
        `SELECT alert_id, event_count, finding_count, revision, toString(first_event_time) AS first,
                toString(last_event_time) AS last, toString(group_until) AS until, length(event_ids) AS sample
         FROM ${database}.alerts FINAL`,
      );
      expect(rows).toEqual([
        {
          alert_id: seen[0]!.alert_id,
          event_count: FLOOD,
          finding_count: FLOOD,
          revision: seen.length - 1,
          first: '2026-03-01 10:00:00.000',
          last: new Date(T0 + (records.length - 2) * 500).toISOString().replace('T', ' ').replace('Z', ''),
          until: '2026-03-01 11:00:00.000',
          sample: '20', // UInt64 comes back as text
        },
      ]);
    } finally {
      await store.close();
    }
  });
});
