/**
 * The offline path (`hooklog rules test --cases`) and the live consumer agree:
 * the shipped content's stream cases — stateful (impossible travel, in and out
 * of order), threshold, distinct and match rules — go through a real Kafka
 * topic to the alerting consumer (startAlerting over rule_paths: [content]),
 * whose alerts land in the ClickHouse alerts table on real chdb; each case's
 * alerts there equal the offline run's, id for id (same rule, org, group key,
 * count, events and times), and the live alerts meet the case's expectation.
 *
 * One live engine sees every case, one after another in one partition, so each
 * case is moved to its own stretch of event time (whole weeks, so hour and
 * weekday stay) and its own orgs, and followed by a clock event of another org
 * at the case's end: what advanceTo does offline, a later event does live.
 * The offline run takes the same moved case. A live consumer has one
 * allowed_lateness_ms: cases are grouped by theirs, one consumer per group.
 * Cases with their own Sigma placeholders compile differently from the
 * configured rule, so they are left to the offline suite.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../platform/log.js';
import { migrate, openStore, type Store } from '../../../platform/store/index.js';
import { Header, topicNames } from '../../../platform/stream/headers.js';
import { openKafkaStream } from '../../../platform/stream/kafka/index.js';
import type { Stream, StreamRecord } from '../../../platform/stream/types.js';
import { kafkaBrokers } from '../../../test/kafka/inject.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import type { Alert } from '../alert.js';
import { alertingSchema } from '../config.js';
import { eventMeta } from '../consumer.js';
import { CONTENT_DIR, alertingTopics, startAlerting } from '../index.js';
import { loadCases, type LoadedCase } from './load.js';
import { caseEndMs, judge, runStreamCase } from './run.js';

const log = silentLogger();
const DAY = 86_400_000;
const WEEK = 7 * DAY;
const DEDUP_MS = 600_000;
const dir = mkdtempSync(join(tmpdir(), 'hooklog-agreement-'));
let stream: Stream;
let store: Store;

beforeAll(async () => {
  stream = await openKafkaStream({ brokers: kafkaBrokers().split(','), clientId: randomName('agree'), logger: log });
  store = openStore({ database: randomName('agree'), dataDir: dir, logger: log });
  await migrate(store, log);
});
afterAll(async () => {
  await stream?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const timeOf = (e: Readonly<Record<string, unknown>>) => eventMeta(e as Record<string, unknown>, '', 0, '').timeMs;

/** The case moved to start at or after `from` (by whole weeks), its orgs prefixed with `tag`. */
function moved(c: LoadedCase, from: number, tag: string): LoadedCase {
  const first = Math.min(...c.feed.map((f) => timeOf(f.event)));
  const shift = Math.ceil((from - first) / WEEK) * WEEK;
  return {
    ...c,
    feed: c.feed.map((f) => ({
      org: `${tag}-${f.org}`,
      event: { ...f.event, published: new Date(timeOf(f.event) + shift).toISOString() },
    })),
    untilMs: c.untilMs === null ? null : c.untilMs + shift,
  };
}

function record(org: string, event: object): StreamRecord {
  return {
    key: org,
    value: Buffer.from(JSON.stringify(event)),
    headers: { [Header.org]: org, [Header.source]: 'hook' },
  };
}

interface Row {
  alert_id: string;
  rule_id: string;
  org: string;
  group_key: string;
  severity: Alert['severity'];
  event_count: number;
  event_time: string;
  first_event_time: string;
  event_ids: string[];
}

const chIso = (t: string) => `${t.replace(' ', 'T')}Z`;
const fromOffline = (a: Alert) => [
  a.alert_id,
  a.rule_id,
  a.org,
  a.key,
  a.count,
  a.first_event_time,
  a.event_time,
  a.event_ids,
];
const fromLive = (r: Row) => [
  r.alert_id,
  r.rule_id,
  r.org,
  r.group_key,
  Number(r.event_count),
  chIso(r.first_event_time),
  chIso(r.event_time),
  r.event_ids,
];

/** Runs `cases` (all with one allowed lateness) through a live consumer; resolves to the alerts table's rows. */
async function live(cases: readonly LoadedCase[], latenessMs: number): Promise<Row[]> {
  const prefix = randomName('agree');
  const group = randomName('alerting');
  const t = topicNames(prefix);
  await stream.ensureTopics([
    { name: t.logs, partitions: 1 },
    { name: t.deadletter, partitions: 1 },
  ]);
  const config = alertingSchema.parse({
    group,
    rule_paths: [CONTENT_DIR],
    allowed_lateness_ms: latenessMs,
    dedup_window_ms: DEDUP_MS,
    scheduled: false,
    max_batch_records: 50,
    max_batch_wait_ms: 20,
  });
  const alerting = await startAlerting({
    config,
    stream,
    store,
    topicPrefix: prefix,
    partitions: 1,
    logsTopic: t.logs,
    deadletterTopic: t.deadletter,
    logger: log,
  });
  try {
    const records = cases.flatMap((c, k) => [
      ...c.feed.map((f) => record(f.org, f.event)),
      record('clock', {
        uuid: `clock-${prefix}-${k}`,
        eventType: 'hooklog.cases.clock',
        published: new Date(caseEndMs(c, latenessMs)).toISOString(),
      }),
    ]);
    for (let i = 0; i < records.length; i += 100) await stream.append(t.logs, records.slice(i, i + 100));
    const end = (await stream.latestOffsets(t.logs)).get(0)!;
    await waitFor(async () => (await stream.committedOffsets(t.logs, group)).get(0) ?? 0, {
      until: (v) => v >= end,
      timeoutMs: 60_000,
      what: `the alerting consumer to evaluate ${end} records`,
    });
    // Every alert is on the alerts topic (appended before the logs offsets were committed). A last record
    // appended now, once the ClickHouse output has committed past it, means the table holds them all.
    const alertsTopic = alertingTopics(prefix).alerts;
    const last: Alert = {
      alert_id: `end-${prefix}`,
      rule_id: 'end',
      rule_title: 'end',
      severity: 'low',
      kind: 'match',
      org: 'end',
      key: '[]',
      event_time: '2040-01-01T00:00:00.000Z',
      first_event_time: '2040-01-01T00:00:00.000Z',
      count: 0,
      event_ids: [],
    };
    await stream.append(alertsTopic, [record('end', last)]);
    const alertsEnd = (await stream.latestOffsets(alertsTopic)).get(0)!;
    await waitFor(async () => (await stream.committedOffsets(alertsTopic, `${group}.clickhouse`)).get(0) ?? 0, {
      until: (v) => v >= alertsEnd,
      timeoutMs: 60_000,
      what: 'the ClickHouse output to write every alert',
    });
  } finally {
    await alerting.stop();
  }
  const orgs = [...new Set(cases.flatMap((c) => c.feed.map((f) => f.org)))];
  return store.query<Row>(
    `SELECT alert_id, rule_id, org, group_key, severity, event_count, toString(event_time) AS event_time,
            toString(first_event_time) AS first_event_time, event_ids
     FROM ${store.database}.alerts FINAL WHERE org IN {orgs:Array(String)} ORDER BY alert_id`,
    { orgs },
  );
}

describe('offline cases and the live consumer agree', () => {
  it('same alerts, same group keys, for every stream case of the shipped content', { timeout: 180_000 }, async () => {
    // A case with mocks starts from state the live engine only builds from earlier events: nothing live to compare.
    const all = loadCases([CONTENT_DIR]).cases.filter(
      (c) => c.rule.kind !== 'scheduled' && !c.spec.placeholders && c.spec.mocks === undefined,
    );
    const byLateness = new Map<number, LoadedCase[]>();
    let from = Date.parse('2031-01-06T00:00:00Z');
    all.forEach((c, k) => {
      const lateness = c.spec.lateness_ms ?? 300_000;
      const m = moved(c, from, `c${k}`);
      from = caseEndMs(m, lateness) + lateness + DAY;
      byLateness.set(lateness, [...(byLateness.get(lateness) ?? []), m]);
    });
    expect([...byLateness.keys()].sort()).toEqual([300_000, 7_200_000]);

    const rows = (await Promise.all([...byLateness].map(([lateness, cases]) => live(cases, lateness)))).flat();
    const compared: Array<{ kind: string; alerts: number }> = [];
    for (const c of [...byLateness.values()].flat()) {
      const orgs = new Set(c.feed.map((f) => f.org));
      const mine = rows.filter((r) => orgs.has(r.org) && r.rule_id === c.rule.id);
      const offline = runStreamCase(c, { allowedLatenessMs: c.spec.lateness_ms ?? 300_000, dedupWindowMs: DEDUP_MS });
      const what = `${c.rule.id} › ${c.name}`;
      expect(mine.map(fromLive), what).toEqual(
        [...offline.alerts].sort((a, b) => a.alert_id.localeCompare(b.alert_id)).map(fromOffline),
      );
      const liveAlerts = mine.map((r) => ({ key: r.group_key, severity: r.severity, count: Number(r.event_count) }));
      expect(judge(c.spec, liveAlerts as Alert[]), what).toBeNull();
      compared.push({ kind: c.rule.kind, alerts: mine.length });
    }
    // The comparison covers stateful and threshold rules that did alert, not only silence.
    const alerted = (kind: string) => compared.filter((x) => x.kind === kind && x.alerts > 0).length;
    expect(alerted('stateful')).toBeGreaterThanOrEqual(2);
    expect(alerted('threshold')).toBeGreaterThanOrEqual(5);
    expect(alerted('distinct')).toBeGreaterThanOrEqual(3);
    expect(compared.length).toBeGreaterThanOrEqual(60);
  });
});
