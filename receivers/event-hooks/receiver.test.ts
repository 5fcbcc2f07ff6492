/**
 * The receiver over HTTP on a real embedded stream: acknowledgement only when
 * durable, the budget, bounded in-flight work, delivery dedupe, metrics, logs.
 * The end-to-end suites (test/e2e/event-hooks-*) drive the real CLI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delivery, validLogEvents } from '../../test/fixtures/index.js';
import { SECRET, readTopic, sample, startHarness, type Harness } from './testing.js';
import { waitFor } from '../../test/support/wait.js';

const events = validLogEvents();
const post = (h: Harness, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${h.url}/hooks/events/h1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-hook-secret': SECRET, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(3000),
  });
const metrics = async (h: Harness) => (await fetch(`${h.url}/metrics`)).text();

describe('event hook receiver (embedded stream, in process)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      server: { ack_timeout_ms: 400 },
      event_hook_receiver: { max_in_flight_deliveries: 3, retry_after_seconds: 7 },
    });
  });
  afterAll(async () => h?.close());

  it('acknowledges a delivery with 204 once its events and dead letters are in the stream, and counts it in /metrics', async () => {
    const before = await metrics(h);
    const bad = { published: '2026-01-01T00:00:00Z', eventType: 'x' };
    const res = await post(h, delivery('acme', 'h1', [events[0], bad, events[1]], 'metrics-delivery'));
    expect(res.status).toBe(204);
    const logs = await readTopic(h.stream, h.topics.logs, 2);
    expect(logs.map((r) => JSON.parse(r.value.toString()))).toEqual(expect.arrayContaining([events[0], events[1]]));
    const dl = await readTopic(h.stream, h.topics.deadletter, 1);
    expect(JSON.parse(dl[0]!.value.toString())).toEqual(bad);
    expect(dl[0]!.headers['hooklog-request-id']).toBe(res.headers.get('x-request-id'));

    const after = await metrics(h);
    const delta = (name: string, labels: Record<string, string>) =>
      sample(after, name, labels) - sample(before, name, labels);
    expect(delta('hooklog_event_hook_deliveries_total', { hook: 'h1', method: 'POST', status: '204' })).toBe(1);
    expect(delta('hooklog_event_hook_events_total', { hook: 'h1', outcome: 'appended' })).toBe(2);
    expect(delta('hooklog_event_hook_events_total', { hook: 'h1', outcome: 'dead_lettered' })).toBe(1);
    expect(delta('hooklog_event_hook_rejections_total', { hook: 'h1', reason: 'invalid-event' })).toBe(1);
    expect(delta('hooklog_event_hook_ack_seconds_count', { hook: 'h1' })).toBe(1);
    expect(delta('hooklog_event_hook_ack_seconds_bucket', { hook: 'h1', le: '+Inf' })).toBe(1);
    expect(sample(after, 'hooklog_event_hook_in_flight_deliveries')).toBe(0);
    expect(after).toMatch(/^# TYPE hooklog_event_hook_in_flight_bytes gauge$/m);
  });

  it('refuses every authentication failure alike, counts it, and logs it with the request id but never the secret', async () => {
    const before = await metrics(h);
    const cases = [
      fetch(`${h.url}/hooks/events/h1`, { headers: { 'x-okta-verification-challenge': 'c' } }),
      fetch(`${h.url}/hooks/events/h1`, {
        headers: { 'x-hook-secret': `${SECRET}x`, 'x-okta-verification-challenge': 'c' },
      }),
      fetch(`${h.url}/hooks/events/nope`, {
        headers: { 'x-hook-secret': SECRET, 'x-okta-verification-challenge': 'c' },
      }),
      fetch(`${h.url}/hooks/events/h1`, { headers: { authorization: SECRET, 'x-okta-verification-challenge': 'c' } }), // right value, wrong header
      post(h, delivery('acme', 'h1', [events[2]]), { 'x-hook-secret': 'wrong-secret-but-long-enough' }),
      post(h, delivery('acme', 'h1', [events[2]]), { 'x-hook-secret': '' }),
    ];
    const responses = await Promise.all(cases);
    const bodies = await Promise.all(responses.map((r) => r.text()));
    expect(responses.map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 401]);
    expect(new Set(bodies).size).toBe(1);
    const after = await metrics(h);
    const failures = ['h1', 'unknown'].reduce(
      (n, hook) =>
        n +
        sample(after, 'hooklog_event_hook_rejections_total', { hook, reason: 'unauthorized' }) -
        sample(before, 'hooklog_event_hook_rejections_total', { hook, reason: 'unauthorized' }),
      0,
    );
    expect(failures).toBe(6);
    const logged = h.logs().filter((l) => l.msg === 'event_hook_auth_failed');
    for (const r of responses) expect(logged.some((l) => l.request_id === r.headers.get('x-request-id'))).toBe(true);
    expect(h.rawLogs()).not.toContain(SECRET);
    expect(h.rawLogs()).not.toContain('wrong-secret-but-long-enough');
  });

  it('answers 503 with Retry-After within the budget when the stream does not acknowledge, and the retry joins that append instead of appending again', async () => {
    const release = h.stream.hold();
    const d = delivery('acme', 'h1', events.slice(10, 15), 'held-delivery');
    const appendedBefore = h.stream.appended.get(h.topics.logs) ?? 0;
    const t0 = performance.now();
    const first = await post(h, d);
    const elapsed = performance.now() - t0;
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('7');
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(1500);
    // The service's retry, while the first append is still pending: it waits on that append.
    const retry = post(h, d);
    release();
    expect((await retry).status).toBe(204);
    expect((await post(h, d)).status).toBe(204); // and a third copy is a known duplicate
    expect((h.stream.appended.get(h.topics.logs) ?? 0) - appendedBefore).toBe(5);
  });

  it('answers 503, never 204, when the append completes only after the budget because the event loop was held past it', async () => {
    const release = h.stream.hold();
    const appendedBefore = h.stream.appended.get(h.topics.logs) ?? 0;
    const answer = post(h, delivery('acme', 'h1', events.slice(40, 42), 'late-delivery'));
    await waitFor(() => (h.stream.appended.get(h.topics.logs) ?? 0) > appendedBefore || undefined, {
      timeoutMs: 5000,
      what: 'the delivery to reach the stream',
      seen: () => `appended ${h.stream.appended.get(h.topics.logs) ?? 0}, before ${appendedBefore}`,
    });
    // What a synchronous call (loading a native library) does to a process: nothing else runs until it returns,
    // the budget's timer included. The append completes in the same turn, before that timer can fire.
    const heldUntil = performance.now() + 600;
    while (performance.now() < heldUntil);
    release();
    const res = await answer;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('7');
  });

  it('answers a retry that joined a pending append 503, never 204, when that append completes only after its budget', async () => {
    const release = h.stream.hold();
    const d = delivery('acme', 'h1', events.slice(44, 46), 'late-retry');
    const first = await post(h, d);
    expect(first.status).toBe(503);
    // The service's retry waits on the first copy's append, which is still held.
    const retry = post(h, d);
    await waitFor(async () => sample(await metrics(h), 'hooklog_event_hook_in_flight_deliveries') >= 2 || undefined, {
      timeoutMs: 5000,
      what: 'the retry in flight beside the held append',
    });
    const heldUntil = performance.now() + 600;
    while (performance.now() < heldUntil);
    release();
    const res = await retry;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('7');
  });

  it('forgets a delivery whose append failed, so the retry appends it', async () => {
    const d = delivery('acme', 'h1', events.slice(20, 22), 'failed-once');
    const before = h.stream.appended.get(h.topics.logs) ?? 0;
    h.stream.failNext(1);
    expect((await post(h, d)).status).toBe(503);
    expect((await post(h, d)).status).toBe(204);
    expect((h.stream.appended.get(h.topics.logs) ?? 0) - before).toBe(4);
  });

  it('bounds in-flight deliveries: once the slots are held by unacknowledged appends, the next delivery gets 503 + Retry-After at once', async () => {
    const release = h.stream.hold();
    const held = await Promise.all([0, 1, 2].map((i) => post(h, delivery('acme', 'h1', [events[30 + i]]))));
    expect(held.map((r) => r.status)).toEqual([503, 503, 503]);
    expect(sample(await metrics(h), 'hooklog_event_hook_in_flight_deliveries')).toBe(3);
    const t0 = performance.now();
    const refused = await post(h, delivery('acme', 'h1', [events[33]]));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(await refused.json()).toEqual({ error: 'too many deliveries in flight, retry later' });
    expect(performance.now() - t0).toBeLessThan(300);
    release();
    // The slots come back when the held appends settle; then deliveries are taken again.
    await expect.poll(async () => sample(await metrics(h), 'hooklog_event_hook_in_flight_deliveries')).toBe(0);
    expect((await post(h, delivery('acme', 'h1', [events[33]]))).status).toBe(204);
  });

  it('logs the address the socket came from, ignoring X-Forwarded-For unless server.trust_proxy is set', async () => {
    const res = await fetch(`${h.url}/hooks/events/h1`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    const line = h.logs().find((l) => l.request_id === res.headers.get('x-request-id'));
    expect(line?.ip).toMatch(/127\.0\.0\.1$/);

    const proxied = await startHarness({ server: { trust_proxy: true } });
    try {
      const r = await fetch(`${proxied.url}/hooks/events/h1`, {
        headers: { 'x-forwarded-for': '198.51.100.1, 203.0.113.9' },
      });
      const l = proxied.logs().find((x) => x.request_id === r.headers.get('x-request-id'));
      // Only the entry our proxy appended (the last) is believed; the client wrote the rest.
      expect(l?.ip).toBe('203.0.113.9');
    } finally {
      await proxied.close();
    }
  });
});
