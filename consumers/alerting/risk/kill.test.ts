/**
 * `kill -9` of `hooklog alert` (a real child process: the rule engine and the
 * risk fold) three times while findings become risk changes: between an
 * alert and its change, mid-transaction, mid-expiry. Afterwards the changes
 * topic holds exactly one rise per user whose finding came in time, and one
 * fall per such user whose contribution expired during the kills (with the
 * id the fold derives from the contribution): none lost, none twice. On
 * Kafka (a restart waits for the killed members to be evicted) and on the
 * embedded log (the lock of a killed process is stale and taken over).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { silentLogger } from '../../../platform/log.js';
import { openEmbeddedStream } from '../../../platform/stream/embedded/index.js';
import { openKafkaStream } from '../../../platform/stream/kafka/index.js';
import { topicNames } from '../../../platform/stream/headers.js';
import type { Stream, StreamRecord } from '../../../platform/stream/types.js';
import { riskTopics, type RiskChange } from '../../../schemas/risk.js';
import { kafkaBrokers } from '../../../test/kafka/inject.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { alertingSchema } from '../config.js';
import { startAlerting } from '../index.js';
import { riskTravelEvents, riskTravelRules } from '../testing/events.js';
import { readChanges } from '../testing/risk-fold.js';
import { expiryChangeId } from './fold.js';
import { spawnAlert } from '../../../test/support/alert-process.js';

const log = silentLogger();
const dir = mkdtempSync(join(tmpdir(), 'hooklog-risk-kill-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ORGS = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'wonka'];
const USERS = 24;

/**
 * Trips for every user of every org, merged in event time (no allowed lateness: an event behind the newest of its
 * partition would be late). Even users' contributions (ttl 1 h) last; odd users' expire `firstExpiryMs` to
 * `lastExpiryMs` from now, while the kills go on.
 */
function workload(now: number, firstExpiryMs: number, lastExpiryMs: number) {
  const timed: Array<[number, StreamRecord]> = [];
  const expiresAt = new Map<string, number>();
  for (const org of ORGS) {
    const trips = Array.from({ length: USERS }, (_, i) => {
      const expires =
        i % 2 === 0 ? now + 3_000_000 + i * 1000 : now + firstExpiryMs + ((lastExpiryMs - firstExpiryMs) * i) / USERS;
      expiresAt.set(`${org}/00uu${i}`, Math.round(expires));
      return { user: `u${i}`, tripAt: Math.round(expires) - 3_600_000 };
    });
    for (const r of riskTravelEvents(org, trips, now - 1000))
      timed.push([Date.parse((JSON.parse(r.value.toString()) as { published: string }).published), r]);
  }
  return { records: timed.sort((a, b) => a[0] - b[0]).map(([, r]) => r), expiresAt };
}

/** Exactly once: per user, a rise, then (once expired) a fall with the fold's id, or nothing (expired on arrival). */
function checkExactlyOnce(changes: readonly RiskChange[], expiresAt: ReadonlyMap<string, number>, now: number) {
  expect(new Set(changes.map((c) => c.change_id)).size).toBe(changes.length);
  const byUser = new Map<string, RiskChange[]>();
  for (const c of changes) byUser.set(`${c.org}/${c.entity.id}`, [...(byUser.get(`${c.org}/${c.entity.id}`) ?? []), c]);
  let falls = 0;
  for (const [user, expires] of expiresAt) {
    const mine = (byUser.get(user) ?? []).map((c) => `${c.cause}:${c.previous}>${c.current}`);
    if (expires > now + 600_000) {
      expect(mine, user).toEqual(['finding:none>high']);
    } else if (mine.length > 0) {
      expect(mine, user).toEqual(['finding:none>high', 'expiry:high>none']);
      const [rise, fall] = byUser.get(user)!;
      expect(fall!.change_id).toBe(
        expiryChangeId(
          rise!.org,
          `${rise!.org}/user/${rise!.entity.id}`,
          rise!.alert_id,
          new Date(expires).toISOString(),
        ),
      );
      falls++;
    }
  }
  expect(byUser.size).toBeLessThanOrEqual(expiresAt.size);
  return falls;
}

/** Everything the workload makes has been made: every lasting user rose, every short one that rose has fallen. */
function complete(changes: readonly RiskChange[], expiresAt: ReadonlyMap<string, number>, now: number): boolean {
  const last = Math.max(...[...expiresAt.values()].filter((e) => e < now + 600_000));
  if (Date.now() < last + 1000) return false;
  const seen = new Map<string, string[]>();
  for (const c of changes)
    seen.set(`${c.org}/${c.entity.id}`, [...(seen.get(`${c.org}/${c.entity.id}`) ?? []), c.cause]);
  for (const [user, expires] of expiresAt) {
    const mine = seen.get(user) ?? [];
    if (expires > now + 600_000 ? mine.length === 0 : mine.length === 1) return false;
  }
  return true;
}

function configFor(prefix: string, group: string, extra: Record<string, unknown>) {
  return {
    log_level: 'info',
    alerting: {
      group,
      rules: riskTravelRules('1h'),
      clickhouse: false,
      max_batch_records: 10,
      max_batch_wait_ms: 20,
      allowed_lateness_ms: 0,
      risk: { max_batch_records: 3, expiry_check_interval_ms: 200 },
    },
    ...extra,
    stream: { topic_prefix: prefix, partitions: 3, ...(extra['stream'] as object) },
  };
}

describe('the risk fold under kill -9 (Kafka)', () => {
  it('three kills: every rise and every fall exactly once', { timeout: 400_000 }, async () => {
    const stream: Stream = await openKafkaStream({
      brokers: kafkaBrokers().split(','),
      clientId: randomName('risk-kill'),
      logger: log,
    });
    const prefix = randomName('rk');
    const t = topicNames(prefix);
    const config = configFor(prefix, randomName('alerting'), {
      data_dir: join(dir, 'kafka'),
      // The broker's least session time-out (group.min.session.timeout.ms): each restart waits that long for the
      // killed member's eviction.
      stream: { kafka: { brokers: kafkaBrokers().split(','), client_id: randomName('hl'), session_timeout_ms: 6_000 } },
    });
    const configPath = join(dir, `${prefix}.yaml`);
    writeFileSync(configPath, stringify(config));
    await stream.ensureTopics([
      { name: t.logs, partitions: 3 },
      { name: riskTopics(prefix).changes, partitions: 3 },
    ]);
    const now = Date.now();
    // The kills come about 4, 10 and 16 s in (a start, and the eviction of the killed member): the short expiries
    // begin under the third run and go on past the last start.
    const { records, expiresAt } = workload(now, 15_000, 45_000);
    const changes = await readChanges(stream, riskTopics(prefix).changes);
    try {
      for (let i = 0; i < records.length; i += 100) await stream.append(t.logs, records.slice(i, i + 100));
      for (let k = 0; k < 3; k++) {
        const before = changes.all.length;
        const proc = spawnAlert(configPath);
        await waitFor(() => changes.all.length, {
          until: (n) => n >= before + 15,
          timeoutMs: 90_000,
          intervalMs: 10,
          what: `progress in run ${k + 1}`,
          seen: () => proc.output().slice(-1500),
        });
        proc.child.kill('SIGKILL');
        await proc.exited;
      }
      // One run to the end, past every short expiry.
      const last = spawnAlert(configPath);
      try {
        await waitFor(() => complete(changes.all, expiresAt, now), {
          timeoutMs: 200_000,
          what: 'every change',
          seen: () => `${changes.all.length} changes; the last run's output: ${last.output().slice(-1500)}`,
        });
      } finally {
        last.child.kill('SIGTERM');
        await last.exited;
      }
      await changes.toEnd();
      const falls = checkExactlyOnce(changes.all, expiresAt, now);
      // The kills happened while levels were falling, not only while rising.
      expect(falls).toBeGreaterThan(0);
    } finally {
      await changes.stop();
      await stream.close();
    }
  });
});

describe('the risk fold under kill -9 (embedded)', () => {
  it('three kills: every rise and every fall exactly once', { timeout: 200_000 }, async () => {
    const dataDir = join(dir, 'embedded');
    const prefix = randomName('rke');
    const t = topicNames(prefix);
    const group = randomName('alerting');
    const config = configFor(prefix, group, { data_dir: dataDir });
    const configPath = join(dir, `${prefix}.yaml`);
    writeFileSync(configPath, stringify(config));
    const now = Date.now();
    // The kills come about 2, 4 and 6 s in (a stale lock is taken over at once): the short expiries begin around them.
    const { records, expiresAt } = workload(now, 6_000, 20_000);
    let local = await openEmbeddedStream({ dataDir, logger: log });
    await local.ensureTopics([
      { name: t.logs, partitions: 3 },
      { name: t.deadletter, partitions: 1 },
    ]);
    // Small appends: the engine's batches, and so the fold's, stay small.
    for (let i = 0; i < records.length; i += 20) await local.append(t.logs, records.slice(i, i + 20));
    await local.close();

    for (let k = 0; k < 3; k++) {
      const proc = spawnAlert(configPath);
      await waitFor(() => (proc.output().match(/risk level changed/g) ?? []).length, {
        until: (n) => n >= 12,
        timeoutMs: 60_000,
        intervalMs: 5,
        what: 'progress',
        seen: () => proc.output().slice(-1500),
      });
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
    // Drain in this process with the same code `hooklog alert` runs, then read every change.
    local = await openEmbeddedStream({ dataDir, logger: log });
    try {
      const alerting = await startAlerting({
        config: alertingSchema.parse(config.alerting),
        stream: local,
        topicPrefix: prefix,
        partitions: 3,
        logsTopic: t.logs,
        deadletterTopic: t.deadletter,
        logger: log,
      });
      const changes = await readChanges(local, riskTopics(prefix).changes);
      try {
        await waitFor(() => complete(changes.all, expiresAt, now), {
          timeoutMs: 60_000,
          what: 'every change',
          seen: () => `${changes.all.length} changes`,
        });
      } finally {
        await alerting.stop();
      }
      await changes.toEnd();
      await changes.stop();
      const falls = checkExactlyOnce(changes.all, expiresAt, now);
      expect(falls).toBeGreaterThan(0);
    } finally {
      await local.close();
    }
  });
});
