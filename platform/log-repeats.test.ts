import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../cli/config/load.js';
import { createLogger } from './log.js';
import { LogRepeats, repeatKey } from './log-repeats.js';

/** A logger built as production builds it (from parsed config), writing JSON lines to memory, on a fake clock. */
function logger(config: Record<string, unknown> = {}) {
  let t = 0;
  const out: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      out.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  const parsed = parseConfig(config, {});
  const log = createLogger({
    level: 'info',
    destination: sink,
    format: 'json',
    repeatIntervalS: parsed.log.repeat_interval_s,
    now: () => t,
  });
  const lines = () => out.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, lines, advance: (ms: number) => (t += ms) };
}

describe('repeated warnings', () => {
  it('writes the first, summarises the rest with a count each interval, and says when they stop', () => {
    const { log, lines, advance } = logger();
    const kafka = log.child({ component: 'kafkajs' });
    for (let i = 0; i < 300; i++) {
      kafka.warn(
        { namespace: 'Connection', port: 9000 + i },
        `Connection error: connect ECONNREFUSED 127.0.0.1:${9000 + i}`,
      );
      advance(50); // 300 over 15 s
    }
    // The first, and one summary once 10 s had passed (the 200 after the first, the one at 10 s included).
    expect(lines().map((l) => l['msg'])).toEqual([
      'Connection error: connect ECONNREFUSED 127.0.0.1:9000',
      'Connection error: connect ECONNREFUSED 127.0.0.1:9000 (repeated 200 times in the last 10 s)',
    ]);
    expect(lines()[1]).toMatchObject({ level: 40, component: 'kafkajs', namespace: 'Connection', repeated: 200 });
    log.repeats.sweep(); // 5 s into the next window: nothing due
    expect(lines()).toHaveLength(2);
    advance(10_000);
    log.repeats.sweep(); // quiet for an interval: one line with the rest of the count and the stop
    expect(
      lines()
        .slice(2)
        .map((l) => l['msg']),
    ).toEqual([
      'Connection error: connect ECONNREFUSED 127.0.0.1:9000 (stopped: 300 times in 15 s, 99 since the last line)',
    ]);
    expect(lines()[2]).toMatchObject({ repeated: 99, repeated_total: 300, repeat_stopped: true });
    expect(log.repeats.size).toBe(0);
    // It starts over: the next occurrence is written.
    kafka.warn({ namespace: 'Connection' }, 'Connection error: connect ECONNREFUSED 127.0.0.1:9000');
    expect(lines()).toHaveLength(4);
  });

  it('summarises the repeats of one component in one line per interval', () => {
    const { log, lines, advance } = logger();
    const kafka = log.child({ component: 'kafkajs' });
    const hooks = log.child({ component: 'event-hooks' });
    for (let i = 0; i < 100; i++) {
      kafka.warn({ namespace: 'Connection' }, 'Connection error: connect ECONNREFUSED 127.0.0.1:9092');
      kafka.warn({ namespace: 'BrokerPool' }, 'Failed to connect to seed broker');
      hooks.warn({ reason: 'not-durable' }, 'event_hook_rejected');
      advance(100); // 100 rounds over 10 s
    }
    log.repeats.sweep();
    const summaries = lines().slice(3);
    expect(summaries.map((l) => `${l['component']} ${l['msg']}`)).toEqual([
      'kafkajs 2 warnings repeated (198 times in the last 10 s)',
      'event-hooks event_hook_rejected (repeated 99 times in the last 10 s)',
    ]);
    expect(summaries[0]!['repeats']).toEqual([
      { msg: 'Connection error: connect ECONNREFUSED 127.0.0.1:9092', namespace: 'Connection', repeated: 99 },
      { msg: 'Failed to connect to seed broker', namespace: 'BrokerPool', repeated: 99 },
    ]);
  });

  it('never holds back a line of another kind, another component, another level, a fatal, or one naming a client address', () => {
    const { log, lines } = logger();
    const hooks = log.child({ component: 'event-hooks' });
    const sink = log.child({ component: 'clickhouse-sink' });
    for (let i = 0; i < 3; i++) {
      hooks.warn({ reason: 'not-durable', request_id: `r${i}` }, 'event_hook_rejected');
      hooks.warn({ reason: 'bad-secret', request_id: `s${i}` }, 'event_hook_rejected');
      hooks.child({ hook: 'other-hook' }).warn({ reason: 'bad-secret' }, 'event_hook_rejected');
      sink.warn({ reason: 'not-durable' }, 'event_hook_rejected');
      hooks.error({ reason: 'not-durable' }, 'event_hook_rejected');
      hooks.error({ err: Object.assign(new Error('a'), { code: 'STORE_UNAVAILABLE' }) }, 'insert failed');
      hooks.error({ err: Object.assign(new Error('b'), { code: 'STORE_CONFIG' }) }, 'insert failed');
      hooks.warn({ request_id: `a${i}`, ip: '192.0.2.1' }, 'event_hook_auth_failed');
      hooks.fatal('giving up');
      hooks.info('started');
    }
    const written = lines().map((l) => `${l['level']} ${l['component']} ${l['msg']} ${l['reason'] ?? ''}`);
    expect(written.filter((l) => l.includes('giving up'))).toHaveLength(3);
    expect(written.filter((l) => l.includes('started'))).toHaveLength(3);
    expect(
      lines()
        .filter((l) => l['msg'] === 'event_hook_auth_failed')
        .map((l) => l['request_id']),
    ).toEqual(['a0', 'a1', 'a2']);
    expect(written.filter((l) => !/giving up|started|auth_failed/.test(l))).toEqual([
      '40 event-hooks event_hook_rejected not-durable',
      '40 event-hooks event_hook_rejected bad-secret',
      '40 event-hooks event_hook_rejected bad-secret',
      '40 clickhouse-sink event_hook_rejected not-durable',
      '50 event-hooks event_hook_rejected not-durable',
      '50 event-hooks insert failed ',
      '50 event-hooks insert failed ',
    ]);
    expect(
      lines()
        .filter((l) => l['msg'] === 'insert failed')
        .map((l) => (l['err'] as { code: string }).code),
    ).toEqual(['STORE_UNAVAILABLE', 'STORE_CONFIG']);
  });

  it('bounds what it tracks: beyond the cap, new lines are written as they come', () => {
    let written = 0;
    const repeats = new LogRepeats({ intervalMs: 10_000, maxKeys: 2, now: () => 0 });
    const admit = (msg: string) => repeats.admit(40, { component: 'x' }, {}, msg, () => written++);
    expect([admit('a'), admit('b'), admit('c'), admit('c'), admit('a')]).toEqual([true, true, true, true, false]);
    expect(repeats.size).toBe(2);
    expect(written).toBe(0);
  });

  it('writes every line with repeat_interval_s 0, and rejects a negative interval', () => {
    const { log, lines } = logger({ log: { repeat_interval_s: 0 } });
    for (let i = 0; i < 5; i++) log.warn('again');
    expect(lines()).toHaveLength(5);
    expect(() => parseConfig({ log: { repeat_interval_s: -1 } }, {})).toThrow(/repeat_interval_s/);
  });

  it('keys on what the line is, not on the numbers in it', () => {
    expect(repeatKey(40, 'kafkajs', {}, 'Restarting the consumer in 300ms')).toBe(
      repeatKey(40, 'kafkajs', {}, 'Restarting the consumer in 1200ms'),
    );
    expect(repeatKey(40, 'kafkajs', {}, 'a')).not.toBe(repeatKey(50, 'kafkajs', {}, 'a'));
  });
});
