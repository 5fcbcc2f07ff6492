/**
 * Bad input over real HTTP, as for event hooks: malformed, oversized, deeply
 * nested, wrongly typed, missing data. Each gets a 4xx within the service's
 * 3 s (postToken's time-out), is counted, and leaves the process answering.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import {
  HOOK_SECRET,
  configWith,
  freshDir,
  hookEntry,
  postToken,
  sampleRequest,
  startApp,
  type LooseJson,
  type RunningApp,
} from './testing.js';

const log = silentLogger();
const dir = freshDir('token-bad-input');
let stream: EmbeddedStream;
let app: RunningApp;
const LIMIT = 256 * 1024;

beforeAll(async () => {
  stream = await openEmbeddedStream({ dataDir: dir, logger: log });
  const rules = [
    { name: 'tag', actions: [{ add: { tokens: 'both', claim: 'dept', template: '{{user.profile.department}}' } }] },
  ];
  app = await startApp(configWith([hookEntry(rules, { max_request_bytes: LIMIT })]), stream, log);
});
afterAll(async () => {
  await app?.close();
  await stream?.close();
});

const counters = () => app.hooks.get('th')!.telemetry.counters;

function variant(edit: (r: LooseJson) => void): LooseJson {
  const r = sampleRequest();
  edit(r);
  return r;
}

async function expectStillServing(): Promise<void> {
  const ok = await postToken(
    app.url,
    variant((r) => (r.data.context.user.profile.department = 'R&D')),
  );
  expect(ok.status).toBe(200);
}

describe('bad input', () => {
  const malformed: Array<[string, string | Buffer, RegExp]> = [
    ['not JSON', '{"eventType": "com.okta.oauth2.tokens.transform", "data": {', /body is not JSON/],
    ['empty body', '', /body is not JSON/],
    ['a JSON array', '[1,2,3]', /body must be a JSON object/],
    ['a JSON string', '"hello"', /body must be a JSON object/],
    ['JSON null', 'null', /body must be a JSON object/],
    [
      '100 000 levels of nesting',
      `{"eventType":"com.okta.oauth2.tokens.transform","data":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
      /nested deeper than 64 levels/,
    ],
    [
      'deep nesting hidden in a claim',
      JSON.stringify(variant((r) => (r.data.identity.claims.deep = JSON.parse('['.repeat(70) + ']'.repeat(70))))),
      /nested deeper than 64 levels/,
    ],
    [
      'invalid UTF-8',
      Buffer.concat([
        Buffer.from('{"eventType":"com.okta.oauth2.tokens.transform","data":{"x":"'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}}'),
      ]),
      /not valid UTF-8/,
    ],
    [
      'brackets inside strings do not nest',
      `{"eventType":"com.okta.oauth2.tokens.transform","x":"${'['.repeat(200)}\\"${'{'.repeat(200)}"}`,
      /data is missing/,
    ],
    ['unbalanced brackets deep down', `{"a":${'{"b":'.repeat(100)}1`, /nested deeper than 64 levels/],
  ];
  it.each(malformed)('%s: 400', async (_, body, reason) => {
    const res = await postToken(app.url, body);
    expect(res.status).toBe(400);
    expect((res.json as { error: string }).error).toMatch(reason);
  });

  const wrong: Array<[string, (r: LooseJson) => void, string]> = [
    ['missing data', (r) => delete r.data, 'data is missing'],
    ['data null', (r) => (r.data = null), 'data is missing'],
    ['data a string', (r) => (r.data = 'x'), 'data must be an object'],
    ['data an array', (r) => (r.data = [r.data]), 'data must be an object'],
    ['missing context', (r) => delete r.data.context, 'data.context is missing'],
    ['eventType missing', (r) => delete r.eventType, 'eventType must be com.okta.oauth2.tokens.transform'],
    ['session a list', (r) => (r.data.context.session = []), 'data.context.session must be an object'],
    [
      'amr a string',
      (r) => (r.data.context.session.amr = 'PASSWORD'),
      'data.context.session.amr must be an array of strings',
    ],
    [
      'amr with numbers',
      (r) => (r.data.context.session.amr = [1]),
      'data.context.session.amr must be an array of strings',
    ],
    [
      'mfaActive a string',
      (r) => (r.data.context.session.mfaActive = 'yes'),
      'data.context.session.mfaActive must be a boolean',
    ],
    [
      'ipAddress a number',
      (r) => (r.data.context.request.ipAddress = 127001),
      'data.context.request.ipAddress must be a string',
    ],
    [
      'scope a list',
      (r) => (r.data.context.protocol.request.scope = ['openid']),
      'data.context.protocol.request.scope must be a string',
    ],
    ['profile a string', (r) => (r.data.context.user.profile = 'x'), 'data.context.user.profile must be an object'],
    ['identity claims a string', (r) => (r.data.identity.claims = 'x'), 'data.identity.claims must be an object'],
    ['access a number', (r) => (r.data.access = 1), 'data.access must be an object'],
    ['eventId a number', (r) => (r.eventId = 7), 'eventId must be a string'],
  ];
  it.each(wrong)('%s: 400 naming the member', async (_, edit, reason) => {
    const res = await postToken(app.url, variant(edit));
    expect(res).toEqual({ status: 400, json: { error: reason } });
  });

  it('oversized: 413 whether the length is declared or streamed', async () => {
    const big = variant((r) => (r.data.identity.claims.blob = 'x'.repeat(LIMIT)));
    expect((await postToken(app.url, big)).status).toBe(413);
    const streamed = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${app.url}/hooks/token/th`,
        { method: 'POST', headers: { 'content-type': 'application/json', authorization: HOOK_SECRET } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.setTimeout(3000, () => req.destroy(new Error('no answer within 3 s')));
      for (let i = 0; i < 40; i++) req.write('x'.repeat(8 * 1024)); // chunked: no content-length to refuse early
      req.end();
    });
    expect(streamed).toBe(413);
  });

  it('wrong content type: 415; unknown hook or wrong secret: 401 without reading the body', async () => {
    const res = await fetch(`${app.url}/hooks/token/th`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', authorization: HOOK_SECRET },
      body: '{}',
    });
    expect(res.status).toBe(415);
    expect((await postToken(app.url, sampleRequest(), { authorization: HOOK_SECRET }, 'no-such-hook')).status).toBe(
      401,
    );
    const secretFailures = counters().authFailures.secret ?? 0;
    expect(await postToken(app.url, 'x'.repeat(LIMIT * 2), { authorization: 'wrong-secret-0123456789' })).toEqual({
      status: 401,
      json: { error: 'unauthorized' },
    });
    expect(counters().authFailures.secret).toBe(secretFailures + 1);
  });

  it('counts every refusal, never takes the error policy for bad input, and keeps answering (also under a burst)', async () => {
    const before = { ...counters().errors };
    const burst = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        postToken(app.url, i % 3 === 0 ? '{' : i % 3 === 1 ? variant((r) => (r.data = 'x')) : '['.repeat(10_000)),
      ),
    );
    expect(burst.every((r) => r.status === 400)).toBe(true);
    expect(counters().errors.bad_request).toBe(before.bad_request + 60);
    expect(counters().errors.internal).toBe(before.internal);
    expect(counters().decisions.error_allow + counters().decisions.error_deny).toBe(0);
    await expectStillServing();
  });
});
