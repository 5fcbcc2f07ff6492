/**
 * Risk in the sign-in path: the in-memory view of `<prefix>.risk` and rules
 * asking for the user's level, on a real (embedded) stream with hooks started
 * as production starts them. A change appended to the topic reaches the
 * answer without a restart; an expired contribution stops counting at once.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import type { ConsumedRecord, StreamRecord } from '../../platform/stream/types.js';
import { riskKey, type RiskLevel, type RiskState } from '../../schemas/risk.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { RiskView } from './risk-view.js';
import { decide, startTokenHooks, type TokenHooks } from './service.js';
import { accessPatch, configWith, freshDir, hookEntry, idPatch, sampleRequest } from './testing.js';

const log = silentLogger();
const USER = '00uacme0ada0000001x7'; // the fixture request's user
const H = 3_600_000;

function state(user: string, contributions: Array<[RiskLevel, number]>): RiskState {
  const cs = contributions.map(([level, expires], i) => ({
    rule_id: `r${i}`,
    alert_id: `a${i}`,
    level,
    reason: 'test',
    expires_at: new Date(expires).toISOString(),
  }));
  return {
    org: 'acme',
    entity: { type: 'user', id: user },
    level: contributions[0]?.[0] ?? 'none',
    contributions: cs,
    updated_at: new Date().toISOString(),
    change_id: 'c',
  };
}

function record(user: string, s: RiskState | null): StreamRecord {
  return {
    key: riskKey('acme', { type: 'user', id: user }),
    value: s ? Buffer.from(JSON.stringify(s)) : Buffer.alloc(0),
    headers: {},
  };
}

const consumed = (r: StreamRecord, offset: number): ConsumedRecord => ({
  ...r,
  topic: 't',
  partition: 0,
  offset,
  timestamp: 0,
});

describe('the risk view', () => {
  it("answers a user's level at an instant: the highest unexpired contribution", () => {
    const v = new RiskView(log);
    const now = Date.now();
    v.apply([
      consumed(
        record(
          USER,
          state(USER, [
            ['high', now + H],
            ['low', now + 3 * H],
          ]),
        ),
        5,
      ),
    ]);
    expect(v.level('acme', USER, now)).toBe('high');
    expect(v.level('acme', USER, now + H)).toBe('low');
    expect(v.level('acme', USER, now + 3 * H)).toBe('none');
    expect(v.level('globex', USER, now)).toBe('none');
    expect(v.level('acme', undefined, now)).toBe('none');
  });

  it('keeps the record with the highest offset per user: an older one, or a bad one, changes nothing', () => {
    const v = new RiskView(log);
    const now = Date.now();
    v.apply([consumed(record(USER, null), 9)]);
    v.apply([consumed(record(USER, state(USER, [['high', now + H]])), 4)]);
    expect(v.level('acme', USER, now)).toBe('none');
    v.apply([consumed(record(USER, state(USER, [['medium', now + H]])), 10)]);
    v.apply([{ ...consumed(record(USER, null), 11), value: Buffer.from('{"not":"a state"}') }]);
    expect(v.level('acme', USER, now)).toBe('medium');
  });
});

describe('token hook rules on risk', () => {
  const dir = freshDir('token-risk');
  let stream: EmbeddedStream;
  let hooks: TokenHooks;
  const topic = randomName('risk');
  beforeAll(async () => {
    stream = await openEmbeddedStream({ dataDir: dir, logger: log });
    await stream.ensureTopics([{ name: topic, partitions: 3, compacted: true }]);
    const config = configWith([
      hookEntry([
        { name: 'deny-high', when: { risk: { user: ['high'] } }, actions: [{ deny: { error_summary: 'At risk' } }] },
        {
          name: 'short-medium',
          when: { risk: { user: ['medium'] } },
          actions: [
            { lifetime: { tokens: 'access', seconds: 300 } },
            { add: { tokens: 'id', claim: 'risk', value: 'medium' } },
          ],
        },
      ]),
    ]);
    hooks = await startTokenHooks({
      hooks: config.token_hooks,
      stream,
      topic: 'unused',
      spoolDir: join(dir, 'spool'),
      logger: log,
      riskTopic: topic,
    });
  });
  afterAll(async () => {
    await hooks?.stop();
    await stream?.close();
  });

  const answer = () => {
    const a = decide(hooks.get('th')!, Buffer.from(JSON.stringify(sampleRequest())), 'test');
    return a.status === 200 ? (JSON.parse(a.body) as unknown) : a.status;
  };

  it('denies at high, shortens and tags at medium, follows each change appended, and honours expiry at once', async () => {
    expect(answer()).toBe(204);
    await stream.append(topic, [record(USER, state(USER, [['high', Date.now() + H]]))]);
    await waitFor(() => JSON.stringify(answer()), { until: (got) => got.includes('At risk'), what: 'a deny' });
    expect(answer()).toEqual({ error: { errorSummary: 'At risk' } });

    // High for 1.5 s more, medium for an hour: the level falls with no record saying so.
    const highUntil = Date.now() + 1500;
    await stream.append(topic, [
      record(
        USER,
        state(USER, [
          ['high', highUntil],
          ['medium', Date.now() + H],
        ]),
      ),
    ]);
    await waitFor(() => Date.now(), {
      until: (v) => v >= highUntil,
      timeoutMs: 5000,
      what: 'the high contribution to expire',
    });
    expect(answer()).toEqual({
      commands: [
        idPatch({ op: 'add', path: '/claims/risk', value: 'medium' }),
        accessPatch({ op: 'replace', path: '/token/lifetime/expiration', value: 300 }),
      ],
    });

    // The tombstone: no risk.
    await stream.append(topic, [record(USER, null)]);
    await waitFor(() => answer(), { until: (n) => n === 204, what: 'no risk after the tombstone' });
  });

  it('refuses a level that does not exist, naming the rule', () => {
    expect(() =>
      configWith([
        hookEntry([{ name: 'bad', when: { risk: { user: ['severe'] } }, actions: [{ deny: { error_summary: 'x' } }] }]),
      ]),
    ).toThrow(/risk/);
  });
});
