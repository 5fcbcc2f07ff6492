/**
 * Kafka mode: restart the broker in the middle of a stream of deliveries sent
 * the way the service sends them (3 s time-out, one retry on 5xx or time-out).
 * Every acknowledged event must be in ClickHouse exactly once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { startKafkaBroker, type KafkaBroker } from '../kafka/broker.js';
import { delivery, validLogEvents } from '../fixtures/index.js';
import { startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';

/** The service's delivery policy: one retry on 5xx or time-out, never on 4xx. */
async function deliverLikeTheService(url: string, hookId: string, body: unknown): Promise<number | 'timeout'> {
  let last: number | 'timeout' = 'timeout';
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      last = await postDelivery(url, hookId, body);
    } catch {
      last = 'timeout';
    }
    if (last !== 'timeout' && last < 500) return last;
  }
  return last;
}

describe('broker restart mid-stream (Kafka)', () => {
  let broker: KafkaBroker | undefined;
  let daemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    await broker?.stop();
  });

  it('keeps every acknowledged event exactly once', async () => {
    broker = await startKafkaBroker();
    const inst = writeTestConfig({ kafkaBrokers: broker.brokers });
    const dataDir = (parse(readFileSync(inst.configPath, 'utf8')) as { data_dir: string }).data_dir;
    daemon = await startDaemon(['--config', inst.configPath]);

    const template = validLogEvents();
    const acked = new Set<string>();
    const sent = new Set<string>();
    const outcomes: Array<number | 'timeout'> = [];
    let restarted: Promise<void> | undefined;
    for (let i = 0; i < 60; i++) {
      const batch = Array.from({ length: 10 }, (_, j) => ({
        ...template[(i * 10 + j) % template.length]!,
        uuid: crypto.randomUUID(),
      }));
      batch.forEach((e) => sent.add(e.uuid));
      if (i === 15) restarted = broker.restart();
      const outcome = await deliverLikeTheService(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, batch));
      outcomes.push(outcome);
      if (outcome === 204) batch.forEach((e) => acked.add(e.uuid));
    }
    await restarted;
    expect(acked.size).toBeGreaterThan(0);
    const rows = await waitFor(
      async () => {
        const rs = await queryViaAdminSocket(
          dataDir,
          `SELECT uuid, count() AS n FROM events FINAL WHERE org = '${inst.org}' GROUP BY uuid`,
        );
        const present = new Set(rs?.rows.map((r) => String(r.uuid)));
        return { missing: [...acked].filter((u) => !present.has(u)), rows: rs?.rows ?? [] };
      },
      {
        until: (r) => r.missing.length === 0,
        timeoutMs: 90_000,
        what: `every acknowledged event in ClickHouse (the last saw names those missing of ${acked.size})`,
      },
    ).then((r) => r.rows);
    expect(rows.every((r) => r.n === '1')).toBe(true);
    expect(rows.every((r) => sent.has(String(r.uuid)))).toBe(true);
    const finalCount = await queryViaAdminSocket(
      dataDir,
      `SELECT count() AS n FROM events FINAL WHERE org = '${inst.org}'`,
    );
    expect(Number(finalCount!.rows[0]!.n)).toBe(new Set(rows.map((r) => r.uuid)).size);
    // Report what the restart cost, so a regression towards dropping acknowledged work shows in the log.
    console.info(
      `broker restart: ${acked.size}/${sent.size} events acknowledged, outcomes ${JSON.stringify(countBy(outcomes))}`,
    );
  }, 240_000);
});

function countBy<T extends string | number>(xs: T[]): Record<string, number> {
  return xs.reduce<Record<string, number>>((m, x) => ({ ...m, [String(x)]: (m[String(x)] ?? 0) + 1 }), {});
}
