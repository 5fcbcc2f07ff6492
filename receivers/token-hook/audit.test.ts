/**
 * The audit trail on real parts: decisions made over HTTP land on
 * `<prefix>.token-decisions` in the embedded stream and, through the
 * ClickHouse sink's extra pipeline, in `{db}.token_decisions` in chdb. The
 * queue in front of the stream is bounded: overflow and failed appends go to
 * the disk spool, never waited for, and reach the stream once it takes them;
 * only the spool's cap drops (counted).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startClickHouseSink, type ClickHouseSink } from '../../consumers/clickhouse-sink/index.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { readAll } from '../../platform/stream/embedded/testing.js';
import { topicNames, type Topics } from '../../platform/stream/headers.js';
import type { ConsumedRecord, Stream, StreamRecord } from '../../platform/stream/types.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { APPEND_BYTES, decisionRecord, type DecisionRecord } from './audit.js';
import { mapTokenDecisionRecord, tokenDecisionsPipeline } from './decision-row.js';
import { decide, startTokenHooks } from './service.js';
import { configWith, freshDir, hookEntry, postToken, sampleRequest, startApp, type RunningApp } from './testing.js';

const log = silentLogger();
const dataDir = freshDir('token-audit');
let store: Store;
let stream: EmbeddedStream;
const running: Array<RunningApp | ClickHouseSink> = [];

beforeAll(async () => {
  store = openStore({ database: randomName('tokaudit'), dataDir, logger: log });
  await migrate(store, log);
  stream = await openEmbeddedStream({ dataDir, logger: log });
}, 60_000);
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await ('close' in r ? r.close() : r.stop());
});
afterAll(async () => {
  await stream?.close();
  await store?.close();
});

async function freshTopics(): Promise<Topics> {
  const topics = topicNames(randomName('tk'));
  await stream.ensureTopics([
    { name: topics.logs, partitions: 1 },
    { name: topics.deadletter, partitions: 1 },
    { name: topics.tokenDecisions, partitions: 2 },
  ]);
  return topics;
}

const RULES = [
  {
    name: 'deny-locked',
    when: { user_profile: { locked: ['true'] } },
    actions: [{ deny: { error_summary: 'Account locked.' } }],
  },
  {
    name: 'dept',
    when: { scopes_any: ['email'] },
    actions: [{ add: { tokens: 'both', claim: 'dept', template: '{{user.profile.department}}' } }],
  },
  {
    name: 'short-lived',
    when: { client_id: ['customerPortalWeb'] },
    actions: [{ lifetime: { tokens: 'access', seconds: 600 } }],
  },
];

/**
 * Numbers the turns in which the audit does its work: a turn is one run of synchronous code, which holds the event
 * loop until it ends (its end is when the microtasks queued during it run, so one is queued at its first call).
 */
function turnCounter(): { now(): number } {
  let turn = 0;
  let marked = false;
  return {
    now: () => {
      if (!marked) {
        marked = true;
        queueMicrotask(() => {
          marked = false;
          turn++;
        });
      }
      return turn;
    },
  };
}

function request(edit: (r: ReturnType<typeof sampleRequest>) => void) {
  const r = sampleRequest();
  edit(r);
  return r;
}

interface DecisionJson {
  decision_id: string;
  hook_id: string;
  org: string;
  outcome: string;
  rules_matched: string[];
  commands: unknown[];
  error_summary: string;
  user_id: string;
  client_id: string;
  event_id: string;
  latency_us: number;
}

describe('audit trail', () => {
  it('lands every decision on the stream and in ClickHouse, with rules, commands and denials', async () => {
    const topics = await freshTopics();
    const org = randomName('acme');
    const config = configWith([hookEntry(RULES, { org, audit: { flush_interval_ms: 20 } })], {
      stream: { topic_prefix: topics.logs.replace(/\.logs$/, '') },
    });
    const app = await startApp(config, stream, log);
    running.push(app);

    const sent = [
      request((r) => (r.data.context.user.profile.department = 'R&D')), // commands: dept (both) + lifetime
      request((r) => (r.data.context.user.profile.locked = true)), // deny
      request((r) => {
        r.data.context.protocol.request.scope = 'openid';
        r.data.context.protocol.client.id = 'other-client';
        r.eventId = 'evt-none';
      }), // no rule matches: 204
    ];
    const statuses = [];
    for (const body of sent) statuses.push((await postToken(app.url, body)).status);
    expect(statuses).toEqual([200, 200, 204]);
    expect((await postToken(app.url, '{')).status).toBe(400); // not a decision: not audited

    const onStream = await waitFor(
      async () => {
        const got = await readAll(stream, topics.tokenDecisions);
        return got;
      },
      { until: (rows) => rows.length >= 3, what: '3 decisions on the stream' },
    );
    expect(onStream).toHaveLength(3);
    const decisions = onStream.map((r: ConsumedRecord) => ({
      rec: r,
      d: JSON.parse(r.value.toString()) as DecisionJson,
    }));
    for (const { rec, d } of decisions) {
      expect(rec.key).toBe(org);
      expect(rec.headers).toMatchObject({
        'hooklog-org': org,
        'hooklog-source': 'token-hook',
        'hooklog-hook-id': 'th',
      });
      expect(d).toMatchObject({ hook_id: 'th', org, user_id: '00uacme0ada0000001x7' });
      expect(d.decision_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(d.latency_us).toBeGreaterThanOrEqual(0);
    }
    const byOutcome = new Map(decisions.map(({ d }) => [d.outcome, d]));
    expect(byOutcome.get('commands')).toMatchObject({
      rules_matched: ['dept', 'short-lived'],
      client_id: 'customerPortalWeb',
      commands: [
        { type: 'com.okta.identity.patch', value: [{ op: 'add', path: '/claims/dept', value: 'R&D' }] },
        {
          type: 'com.okta.access.patch',
          value: [
            { op: 'add', path: '/claims/dept', value: 'R&D' },
            { op: 'replace', path: '/token/lifetime/expiration', value: 600 },
          ],
        },
      ],
    });
    expect(byOutcome.get('deny')).toMatchObject({
      rules_matched: ['deny-locked'],
      error_summary: 'Account locked.',
      commands: [],
    });
    expect(byOutcome.get('none')).toMatchObject({
      rules_matched: [],
      client_id: 'other-client',
      event_id: 'evt-none',
      commands: [],
    });

    const group = randomName('sink');
    const sink = await startClickHouseSink({
      stream,
      store,
      topics,
      group,
      logger: log,
      maxBatchWaitMs: 50,
      consumeDeadletter: false,
      extraPipelines: [tokenDecisionsPipeline(topics.tokenDecisions)],
    });
    running.push(sink);
    const db = store.database;
    const rows = await waitFor(
      async () => {
        const got = await store.query<{
          outcome: string;
          rules_matched: string[];
          commands: string;
          error_summary: string;
          org: string;
          hook_id: string;
          decision_id: string;
          user_id: string;
        }>(
          `SELECT outcome, rules_matched, commands, error_summary, org, hook_id, decision_id, user_id FROM ${db}.token_decisions FINAL WHERE org = {org:String}`,
          { org },
        );
        return got;
      },
      { until: (found) => found.length === 3, what: '3 rows in token_decisions' },
    );
    const rowByOutcome = new Map(rows.map((r) => [r.outcome, r]));
    expect(JSON.parse(rowByOutcome.get('commands')!.commands)).toEqual(byOutcome.get('commands')!.commands);
    expect(rowByOutcome.get('commands')!.rules_matched).toEqual(['dept', 'short-lived']);
    expect(rowByOutcome.get('deny')).toMatchObject({
      error_summary: 'Account locked.',
      rules_matched: ['deny-locked'],
      hook_id: 'th',
      user_id: '00uacme0ada0000001x7',
    });
    expect(new Set(rows.map((r) => r.decision_id))).toEqual(new Set(decisions.map(({ d }) => d.decision_id)));
    // The sink committed the decisions it stored, under its own group.
    await waitFor(
      async () => {
        const committed = await stream.committedOffsets(topics.tokenDecisions, `${group}.token-decisions`);
        return [...stream.endOffsets(topics.tokenDecisions)].map(([p, end]) => ({
          partition: p,
          end,
          committed: committed.get(p) ?? 0,
        }));
      },
      { until: (parts) => parts.every((x) => x.committed === x.end), what: 'decisions committed' },
    );
  });

  it('a queue past half full spools without delaying answers; every decision lands once', async () => {
    const topics = await freshTopics();
    const config = configWith([hookEntry(RULES, { audit: { queue_capacity: 4, flush_interval_ms: 10_000 } })]);
    const hooks = await startTokenHooks({
      hooks: config.token_hooks,
      stream,
      topic: topics.tokenDecisions,
      spoolDir: freshDir('token-spool'),
      logger: log,
    });
    const hook = hooks.get('th')!;
    const body = Buffer.from(JSON.stringify(sampleRequest()));
    // No flush runs (10 s interval): past capacity the one decision that does not fit is spooled on its own.
    for (let i = 0; i < 10; i++) expect(decide(hook, body, `r${i}`).status).toBe(200);
    expect(hook.audit!.length).toBe(4);
    expect(hook.telemetry.counters.auditSpooled).toBe(6);
    // The spill moves queued batches to disk a turn later; the replay loop appends them back.
    await waitFor(() => hook.telemetry.counters.auditReplayed >= 6 && hook.audit!.length < 2, {
      what: 'spill',
      seen: () => ({
        'hook.telemetry.counters.auditReplayed': hook.telemetry.counters.auditReplayed,
        'hook.audit!.length': hook.audit!.length,
      }),
    });
    await hooks.stop();
    const onStream = await readAll(stream, topics.tokenDecisions);
    const ids = onStream.map((r) => (JSON.parse(r.value.toString()) as DecisionJson).decision_id);
    expect(ids).toHaveLength(10);
    expect(new Set(ids).size).toBe(10);
    expect(hook.telemetry.counters.auditDropped).toBe(0);
  });

  it('decisions made during an append wait for their own flush interval, not a batch of one right after', async () => {
    const topics = await freshTopics();
    // The real embedded stream behind a gate the test opens: an append in flight for as long as the test wants.
    const batches: number[] = [];
    const { gated, open } = gatedStream(stream, (records) => batches.push(records.length));
    const config = configWith([hookEntry(RULES, { audit: { flush_interval_ms: 300 } })]);
    const hooks = await startTokenHooks({
      hooks: config.token_hooks,
      stream: gated,
      topic: topics.tokenDecisions,
      spoolDir: freshDir('token-spool'),
      logger: log,
    });
    const hook = hooks.get('th')!;
    const body = Buffer.from(JSON.stringify(sampleRequest()));
    for (let i = 0; i < 3; i++) decide(hook, body, `a${i}`);
    await waitFor(() => batches.length, { until: (n) => n === 1, what: 'the first append' });
    const queuedAt = performance.now();
    for (let i = 0; i < 2; i++) decide(hook, body, `b${i}`);
    open();
    await waitFor(() => hook.telemetry.counters.auditAppended, {
      until: (n) => n >= 3,
      what: 'the first batch appended',
    });
    expect(batches).toEqual([3]); // the two made meanwhile did not follow at once
    await waitFor(() => hook.telemetry.counters.auditAppended, {
      until: (n) => n === 5,
      what: 'the second batch',
      timeoutMs: 10_000,
    });
    expect(batches).toEqual([3, 2]);
    expect(performance.now() - queuedAt).toBeGreaterThanOrEqual(250);
    await hooks.stop();
    expect(await readAll(stream, topics.tokenDecisions)).toHaveLength(5);
  });

  it('no turn of the event loop appends more than one byte budget of decisions, however many are queued', async () => {
    const topics = await freshTopics();
    // Counted on the real embedded stream: every append, the turn it was made in, its bytes.
    const turns = turnCounter();
    const appends: Array<{ turn: number; records: number; bytes: number }> = [];
    const counting = new Proxy(stream as Stream, {
      get: (target, name) =>
        name === 'append'
          ? (topic: string, records: readonly StreamRecord[]) => {
              appends.push({
                turn: turns.now(),
                records: records.length,
                bytes: records.reduce((n, r) => n + r.value.length, 0),
              });
              return target.append(topic, records);
            }
          : (target as unknown as Record<string | symbol, unknown>)[name],
    });
    // batch_records allows one append of them all: the byte budget is what splits it.
    const config = configWith([hookEntry(RULES, { audit: { batch_records: 10_000, flush_interval_ms: 20 } })]);
    const hooks = await startTokenHooks({
      hooks: config.token_hooks,
      stream: counting,
      topic: topics.tokenDecisions,
      spoolDir: freshDir('token-spool'),
      logger: log,
    });
    const hook = hooks.get('th')!;
    // A 2,000-character department in both tokens' claims: each decision's record is some 4 KB.
    const N = 300;
    const bodies = Array.from({ length: N }, (_, i) =>
      Buffer.from(
        JSON.stringify(
          request((r) => {
            r.data.context.user.profile.department = 'd'.repeat(2_000);
            r.eventId = `e${i}`;
          }),
        ),
      ),
    );
    for (let i = 0; i < N; i++) expect(decide(hook, bodies[i]!, `r${i}`).status).toBe(200);
    await waitFor(() => hook.telemetry.counters.auditAppended, {
      until: (n) => n === N,
      what: `${N} decisions appended`,
      timeoutMs: 30_000,
    });
    const total = appends.reduce((n, a) => n + a.bytes, 0);
    expect(total).toBeGreaterThan(4 * APPEND_BYTES); // what was queued at once is several budgets' worth
    const perTurn = new Map<number, { records: number; bytes: number }>();
    for (const a of appends) {
      const t = perTurn.get(a.turn) ?? { records: 0, bytes: 0 };
      perTurn.set(a.turn, { records: t.records + a.records, bytes: t.bytes + a.bytes });
    }
    for (const t of perTurn.values()) expect(t.bytes).toBeLessThanOrEqual(APPEND_BYTES);
    await hooks.stop();
    // All of them, once each, in the order they were decided (one org: one partition).
    const onStream = (await readAll(stream, topics.tokenDecisions)).map(
      (r) => (JSON.parse(r.value.toString()) as DecisionJson).event_id,
    );
    expect(onStream).toEqual(Array.from({ length: N }, (_, i) => `e${i}`));
    expect(hook.telemetry.counters.auditSpooled + hook.telemetry.counters.auditDropped).toBe(0);
  });

  it('a queue past half full spills at most one byte budget of decisions per turn of the event loop', async () => {
    const topics = await freshTopics();
    // The real embedded stream behind a gate: the flush's append waits, so the queue fills and spills.
    const { gated, open } = gatedStream(stream);
    const config = configWith([
      hookEntry(RULES, { audit: { batch_records: 10_000, queue_capacity: 400, flush_interval_ms: 1 } }),
    ]);
    const hooks = await startTokenHooks({
      hooks: config.token_hooks,
      stream: gated,
      topic: topics.tokenDecisions,
      spoolDir: freshDir('token-spool'),
      logger: log,
    });
    const hook = hooks.get('th')!;
    // Counted where the queue reports what it spooled: per turn of the event loop.
    const turns = turnCounter();
    const spooledPerTurn = new Map<number, number>();
    const report = hook.telemetry.auditSpooled.bind(hook.telemetry);
    hook.telemetry.auditSpooled = (records, backlogBytes) => {
      const turn = turns.now();
      spooledPerTurn.set(turn, (spooledPerTurn.get(turn) ?? 0) + records);
      report(records, backlogBytes);
    };
    // Each decision's record is over 4,000 bytes (a 2,000-character claim in both tokens).
    const body = Buffer.from(
      JSON.stringify(request((r) => (r.data.context.user.profile.department = 'd'.repeat(2_000)))),
    );
    const N = 300;
    for (let i = 0; i < N; i++) expect(decide(hook, body, `r${i}`).status).toBe(200);
    await waitFor(() => hook.audit!.length, { until: (n) => n * 2 < 400, what: 'the queue spilled below half' });
    const spilled = [...spooledPerTurn.values()];
    expect(spilled.reduce((a, b) => a + b, 0)).toBeGreaterThan(Math.ceil(APPEND_BYTES / 4_000));
    for (const n of spilled) expect(n).toBeLessThanOrEqual(Math.floor(APPEND_BYTES / 4_000));
    open();
    await hooks.stop();
    const ids = (await readAll(stream, topics.tokenDecisions)).map(
      (r) => (JSON.parse(r.value.toString()) as DecisionJson).decision_id,
    );
    expect(ids).toHaveLength(N);
    expect(new Set(ids).size).toBe(N);
    expect(hook.telemetry.counters.auditDropped).toBe(0);
  });

  it('a stream that is down costs answers nothing: decisions spool and reach it once it is back, each once', async () => {
    const dir = freshDir('token-audit-down');
    let target = await openEmbeddedStream({ dataDir: dir, logger: log });
    await target.ensureTopics([{ name: 'decisions', partitions: 1 }]);
    // The hook holds one Stream; behind it the real embedded log is closed, then opened again on the same data.
    const behind = new Proxy({} as Stream, {
      get: (_, name) => {
        const v = (target as unknown as Record<string | symbol, unknown>)[name];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const config = configWith([hookEntry(RULES, { audit: { flush_interval_ms: 1 } })]);
    const hooks = await startTokenHooks({
      hooks: config.token_hooks,
      stream: behind,
      topic: 'decisions',
      spoolDir: freshDir('token-spool'),
      logger: log,
    });
    const hook = hooks.get('th')!;
    await target.close();
    const body = Buffer.from(JSON.stringify(sampleRequest()));
    const N = 200;
    for (let i = 0; i < N; i++) {
      const started = performance.now();
      expect(decide(hook, body, `r${i}`).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(50); // never waits for the stream
    }
    await waitFor(() => hook.telemetry.counters.auditSpooled, {
      until: (v) => v === N,
      what: `${N} spooled`,
      timeoutMs: 30_000,
    });
    expect(hook.audit!.spooledBytes).toBeGreaterThan(0);
    expect(hook.telemetry.counters.auditAppended).toBe(0);

    target = await openEmbeddedStream({ dataDir: dir, logger: log });
    await waitFor(() => hook.audit!.spooledBytes, {
      until: (n) => n === 0,
      what: 'the spool replayed',
      timeoutMs: 30_000,
    });
    const ids = (await readAll(target, 'decisions')).map(
      (r) => (JSON.parse(r.value.toString()) as DecisionJson).decision_id,
    );
    expect(ids).toHaveLength(N);
    expect(new Set(ids).size).toBe(N);
    expect(hook.telemetry.counters.auditReplayed).toBe(N);
    expect(hook.telemetry.counters.auditDropped).toBe(0);
    await hooks.stop();
    await target.close();
  });

  it('a spool left by a stopped process is replayed by the next one; past its cap, drops are counted', async () => {
    const dir = freshDir('token-audit-restart');
    const spoolDir = freshDir('token-spool');
    const down = await openEmbeddedStream({ dataDir: dir, logger: log });
    await down.ensureTopics([{ name: 'decisions', partitions: 1 }]);
    await down.close();
    const config = configWith([hookEntry(RULES, { audit: { flush_interval_ms: 1, spool_max_bytes: 16_384 } })]);
    const start = (s: Stream) =>
      startTokenHooks({ hooks: config.token_hooks, stream: s, topic: 'decisions', spoolDir, logger: log });
    const first = await start(down);
    const hook = first.get('th')!;
    const body = Buffer.from(JSON.stringify(sampleRequest()));
    for (let i = 0; i < 60; i++) expect(decide(hook, body, `r${i}`).status).toBe(200);
    await waitFor(() => hook.telemetry.counters.auditSpooled + hook.telemetry.counters.auditDropped, {
      until: (n) => n === 60,
      what: 'every decision spooled or dropped',
      timeoutMs: 30_000,
    });
    const kept = hook.telemetry.counters.auditSpooled;
    expect(kept).toBeGreaterThan(0);
    expect(hook.telemetry.counters.auditDropped).toBeGreaterThan(0); // 16 KB holds fewer than 60 decisions
    await first.stop();

    const up = await openEmbeddedStream({ dataDir: dir, logger: log });
    const second = await start(up);
    await waitFor(() => second.get('th')!.audit!.spooledBytes, {
      until: (n) => n === 0,
      what: 'the replay',
      timeoutMs: 30_000,
    });
    const ids = (await readAll(up, 'decisions')).map(
      (r) => (JSON.parse(r.value.toString()) as DecisionJson).decision_id,
    );
    expect(ids).toHaveLength(kept);
    expect(new Set(ids).size).toBe(kept);
    await second.stop();
    await up.close();
  });
});

describe('mapTokenDecisionRecord', () => {
  const rec = (value: string): ConsumedRecord => ({
    topic: 't',
    partition: 0,
    offset: 0,
    key: 'acme',
    value: Buffer.from(value),
    headers: { 'hooklog-org': 'acme' },
    timestamp: Date.parse('2026-11-20T10:00:00Z'),
  });
  it('refuses what cannot be a decision, tolerates missing optional fields', () => {
    expect(mapTokenDecisionRecord(rec('not json'))).toEqual({ ok: false, reason: 'value is not valid JSON' });
    expect(mapTokenDecisionRecord(rec('[]'))).toEqual({ ok: false, reason: 'value is not a JSON object' });
    expect(mapTokenDecisionRecord(rec('{"decided_at":"2026-11-20T10:00:00Z"}'))).toEqual({
      ok: false,
      reason: 'decision has no decision_id',
    });
    expect(mapTokenDecisionRecord(rec('{"decision_id":"d1","decided_at":"yesterday"}'))).toEqual({
      ok: false,
      reason: 'decision has no usable decided_at',
    });
    const ok = mapTokenDecisionRecord(
      rec('{"decision_id":"d1","decided_at":"2026-11-20T10:00:00.123Z","latency_us":-5,"rules_matched":["a",1]}'),
    );
    expect(ok).toMatchObject({
      ok: true,
      row: {
        decision_id: 'd1',
        decided_at: '2026-11-20 10:00:00.123',
        org: 'acme',
        latency_us: 0,
        rules_matched: ['a'],
        commands: '[]',
      },
    });
  });
});

describe('decisionRecord', () => {
  const base: DecisionRecord = {
    decidedAt: Date.parse('2026-11-20T10:00:00.007Z'),
    hookId: 'th',
    org: 'acme',
    eventId: 'evt-1',
    requestId: undefined,
    userId: 'u"ser\\1',
    clientId: 'clïent\u2028\u0000',
    grantType: 'x'.repeat(300),
    outcome: 'commands',
    rulesMatched: ['a', 'b"c'],
    commandsJson: '[{"type":"com.okta.identity.patch","value":[]}]',
    errorSummary: undefined,
    errorKind: undefined,
    latencyUs: 42,
  };
  /** The record's JSON as an object built and stringified would give it. */
  const expected = (r: DecisionRecord, id: string) =>
    JSON.stringify({
      decision_id: id,
      decided_at: new Date(r.decidedAt).toISOString(),
      hook_id: r.hookId,
      org: r.org,
      event_id: r.eventId ?? '',
      request_id: r.requestId ?? '',
      user_id: r.userId ?? '',
      client_id: r.clientId ?? '',
      grant_type: (r.grantType ?? '').slice(0, 256),
      outcome: r.outcome,
      rules_matched: r.rulesMatched,
      error_summary: r.errorSummary ?? '',
      error_kind: r.errorKind ?? '',
      latency_us: r.latencyUs,
      commands: JSON.parse(r.commandsJson ?? '[]') as unknown,
    });

  it('writes the JSON text an object would stringify to, at any millisecond, across seconds and hooks', () => {
    const times = [
      base.decidedAt,
      base.decidedAt + 50, // .057
      base.decidedAt + 993, // the next second
      base.decidedAt - 8, // back into the previous second
      Date.parse('1969-12-31T23:59:59.001Z'),
      1741079402123.5, // not a whole millisecond
    ];
    for (const decidedAt of times) {
      for (const hook of [
        { hookId: 'th', org: 'acme' },
        { hookId: 'h"2', org: 'a\\b' },
      ]) {
        const r = { ...base, ...hook, decidedAt };
        const rec = decisionRecord(r, 'id-1');
        expect(rec.value.toString()).toBe(expected(r, 'id-1'));
        // Nothing per decision in the headers: its time is the record's timestamp, and the hook's records share one
        // headers object (what lets the embedded log encode them once per append).
        expect(rec.timestamp).toBe(decidedAt);
        expect(rec.headers).toEqual({
          'hooklog-org': hook.org,
          'hooklog-source': 'token-hook',
          'hooklog-hook-id': hook.hookId,
          'hooklog-format': '1',
        });
        expect(decisionRecord({ ...r, eventId: 'other', decidedAt: decidedAt + 1 }, 'id-9').headers).toBe(rec.headers);
      }
    }
    const denied = { ...base, outcome: 'deny' as const, errorSummary: 'No "access"', commandsJson: undefined };
    expect(decisionRecord(denied, 'id-2').value.toString()).toBe(expected(denied, 'id-2'));
  });
});

/** `inner` with its appends held until `open()` (each told to `onAppend` first): an append in flight at will. */
function gatedStream(
  inner: Stream,
  onAppend: (records: readonly StreamRecord[]) => void = () => undefined,
): { gated: Stream; open: () => void } {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const gated = new Proxy(inner, {
    get: (target, name) =>
      name === 'append'
        ? async (topic: string, records: readonly StreamRecord[]) => {
            onAppend(records);
            await gate;
            return target.append(topic, records);
          }
        : (target as unknown as Record<string | symbol, unknown>)[name],
  });
  return { gated, open: () => open() };
}
