/**
 * Lateness made visible: an event behind the watermark (older than the partition's newest event time minus
 * allowed_lateness_ms) that a stateful rule would have taken is counted per rule
 * (hooklog_alerting_late_events_total), logged with the watermark it missed once per log interval (the logger
 * summarises repeats), and shown by `hooklog status`. Before, the engine dropped it with no word: the response
 * example's impossible-travel.sh, run for a second user half a minute after the first, quietly did nothing.
 * On real parts: the embedded stream, the alerting consumer, chdb for status.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { collectStatus, statusLateFooter, statusResultSet } from '../../cli/status.js';
import { createLogger, silentLogger } from '../../platform/log.js';
import { registry } from '../../platform/metrics.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { startEngineConsumer } from './consumer.js';
import { PartitionEngine } from './engine.js';
import { alertingTopics } from './index.js';
import { compileRule } from './rules/compile.js';
import { createAlertingTelemetry } from './telemetry.js';

const quiet = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-late-'));
let store: Store;
let stream: EmbeddedStream;

beforeAll(async () => {
  store = openStore({ database: randomName('late'), dataDir, logger: quiet });
  await migrate(store, quiet);
  stream = await openEmbeddedStream({ dataDir, logger: quiet });
}, 60_000);

afterAll(async () => {
  await stream?.close();
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const RULE = {
  id: 'impossible-travel',
  type: 'stateful',
  group_by: ['actor.alternateId'],
  detection: 'eventType eq "user.session.start"',
  fields: { lat: 'client.geographicalContext.geolocation.lat', lon: 'client.geographicalContext.geolocation.lon' },
  when: 'prev.lat != null and km(prev.lat, prev.lon, lat, lon) > 100',
};

describe('late events', () => {
  it('are counted per rule and org only where a rule needing event order would have taken them', () => {
    const rules = [
      compileRule(RULE),
      compileRule({ id: 'each-failure', detection: 'outcome.result eq "FAILURE"' }),
      compileRule({
        id: 'three-failures',
        type: 'threshold',
        threshold: 3,
        window_ms: 600_000,
        group_by: ['actor.alternateId'],
        detection: 'outcome.result eq "FAILURE"',
      }),
      compileRule({
        id: 'failure-then-success',
        type: 'sequence',
        window_ms: 600_000,
        group_by: ['actor.alternateId'],
        first: 'outcome.result eq "FAILURE"',
        then: 'outcome.result eq "SUCCESS"',
      }),
    ];
    const engine = new PartitionEngine(rules, { allowedLatenessMs: 1000 });
    const ev = (result: string) => ({ eventType: 'user.session.start', outcome: { result } });
    engine.process(ev('SUCCESS'), { org: 'a', timeMs: 100_000, id: 'e1' });
    // Behind the watermark (99 s): a failure of org b, a success of org a.
    const alerts = engine.process(ev('FAILURE'), { org: 'b', timeMs: 50_000, id: 'e2' });
    engine.process(ev('SUCCESS'), { org: 'a', timeMs: 60_000, id: 'e3' });
    // An event no rule needing order takes: counted as late, for no rule.
    engine.process({ eventType: 'system.tick' }, { org: 'a', timeMs: 70_000, id: 'e4' });
    expect(alerts.map((a) => a.rule_id)).toEqual(['each-failure']); // a match rule still sees a late event
    expect(engine.state.late).toBe(3);
    expect(engine.state.lateRules).toEqual({
      'impossible-travel': { b: [1, 50_000, 99_000], a: [1, 60_000, 99_000] },
      'three-failures': { b: [1, 50_000, 99_000] },
      'failure-then-success': { b: [1, 50_000, 99_000], a: [1, 60_000, 99_000] },
    });
    // Restarted with one rule fewer: its counts go with it (the state stays bounded by the rules loaded).
    const state = JSON.parse(JSON.stringify(engine.state)) as typeof engine.state;
    expect(
      Object.keys(new PartitionEngine(rules.slice(1), { allowedLatenessMs: 1000 }, state).state.lateRules!),
    ).toEqual(['three-failures', 'failure-then-success']);
  });

  it('are counted per rule, logged once per interval with the watermark they missed, and shown in status', async () => {
    const prefix = randomName('late');
    const group = randomName('alerting');
    const org = 'acme';
    const config = parseConfig(
      {
        data_dir: dataDir,
        stream: { topic_prefix: prefix, partitions: 1 },
        event_hooks: [{ id: 'okta-main', org, auth: { header: 'authorization', secrets: ['s'.repeat(32)] } }],
        alerting: { group, allowed_lateness_ms: 5000, rules: [RULE] },
      },
      {},
    );
    const logs = topicNames(prefix).logs;

    // The alerting log on a clock of our own, as production builds it (repeats summarised every 10 s).
    let clock = 0;
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as never);
        cb();
      },
    });
    const log = createLogger({
      level: 'warn',
      destination: sink,
      format: 'json',
      repeatIntervalS: 10,
      now: () => clock,
    });
    await stream.ensureTopics([
      { name: logs, partitions: 1 },
      { name: alertingTopics(prefix).alerts, partitions: 1 },
      { name: alertingTopics(prefix).state, partitions: 1, compacted: true },
    ]);
    const consumer = await startEngineConsumer({
      stream,
      logsTopic: logs,
      alertsTopic: alertingTopics(prefix).alerts,
      stateTopic: alertingTopics(prefix).state,
      group,
      rules: [compileRule(RULE)],
      allowedLatenessMs: 5000,
      dedupWindowMs: 600_000,
      maxBatchRecords: 100,
      maxBatchWaitMs: 20,
      telemetry: createAlertingTelemetry(log),
    });
    const t0 = Date.parse('2026-11-25T12:00:00.000Z');
    let n = 0;
    const signIn = (user: string, atMs: number) => ({
      key: org,
      value: Buffer.from(
        JSON.stringify({
          uuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
          published: new Date(atMs).toISOString(),
          eventType: 'user.session.start',
          actor: { alternateId: `${user}@example.com` },
          client: { geographicalContext: { geolocation: { lat: 48.8566, lon: 2.3522 } } },
        }),
      ),
      headers: { [Header.org]: org, [Header.source]: 'hook' },
    });
    /** Appends one batch and waits until the engine has committed it. */
    const feed = async (...records: ReturnType<typeof signIn>[]) => {
      await stream.append(logs, records);
      const end = stream.endOffsets(logs);
      await waitFor(async () => (await stream.committedOffsets(logs, group)).get(0) ?? 0, {
        until: (c) => c >= (end.get(0) ?? 0),
        what: `${group} to commit ${logs}`,
      });
    };
    const lateLines = () => lines.filter((l) => String(l['msg']).startsWith('late events not used by rule'));
    const lateMetric = async () =>
      (await registry.getSingleMetric('hooklog_alerting_late_events_total')?.get())?.values.find(
        (v) => v.labels['rule'] === RULE.id,
      )?.value ?? 0;
    const before = await lateMetric();

    try {
      // ann's sign-in at t0 + 60 s moves the watermark to t0 + 55 s; bob's at t0 + 30 s is behind it.
      await feed(signIn('ann', t0), signIn('ann', t0 + 60_000));
      expect(lateLines()).toEqual([]);
      await feed(signIn('bob', t0 + 30_000));
      expect(await lateMetric()).toBe(before + 1);
      expect(lateLines()).toEqual([
        expect.objectContaining({
          level: 40,
          component: 'alerting',
          org,
          rule: RULE.id,
          kind: 'stateful',
          events: 1,
          last_event_at: new Date(t0 + 30_000).toISOString(),
          missed_watermark: new Date(t0 + 55_000).toISOString(),
          late_by_ms: 25_000,
          allowed_lateness_ms: 5000,
        }),
      ]);
      // Two more within the interval: counted, not written again.
      clock += 3000;
      await feed(signIn('bob', t0 + 40_000));
      clock += 3000;
      await feed(signIn('eve', t0 + 10_000));
      expect(await lateMetric()).toBe(before + 3);
      expect(lateLines()).toHaveLength(1);
      // Once the interval has passed, one summary with their count.
      clock += 5000;
      log.repeats.sweep();
      expect(lines.slice(1).map((l) => [l['msg'], l['repeated']])).toEqual([
        [expect.stringMatching(/^late events not used by rule impossible-travel: .*\(repeated 2 times/), 2],
      ]);

      // hooklog status: the org's count on its line, and per rule the last one and the watermark it missed.
      const status = await collectStatus(config, stream, store);
      expect(status).toHaveLength(1);
      expect(status[0]).toMatchObject({
        org,
        source: 'hook',
        late_events: 3,
        late_rules: [
          {
            rule: RULE.id,
            events: 3,
            last_event_at: new Date(t0 + 10_000).toISOString(),
            missed_watermark: new Date(t0 + 55_000).toISOString(),
          },
        ],
      });
      expect(statusResultSet(status).rows[0]).toMatchObject({ late_events: 3 });
      expect(statusLateFooter(status)).toBe(
        `Late for rule impossible-travel (org acme): 3 events behind the watermark; the last, of ${new Date(t0 + 10_000).toISOString()}, missed ${new Date(t0 + 55_000).toISOString()} by 45 s\n`,
      );
    } finally {
      await consumer.stop();
    }
  }, 120_000);
});
