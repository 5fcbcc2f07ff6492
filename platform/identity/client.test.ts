/**
 * The client's reading of a page over real HTTP: each item's bytes exactly as
 * the service sent them (views of the reply), parsed items paired with them,
 * and a 2xx that is not one JSON array retried, never half-used.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HooklogError } from '../errors.js';
import { SswsAuthenticator } from './auth.js';
import { IdentityClient } from './client.js';
import { withPolicies } from './policies.js';
import { RateBudget } from './rate-limit.js';

let server: Server | null = null;
afterEach(async () => {
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = null;
});

/** Serves `replies` in turn (the last one repeated); returns the base URL. */
async function serve(
  replies: Array<{ status: number; body: Buffer | string }>,
): Promise<{ url: string; calls: () => number }> {
  let calls = 0;
  server = createServer((req, res) => {
    const r = replies[Math.min(calls++, replies.length - 1)]!;
    res.writeHead(r.status, {
      'content-type': 'application/json',
      link: `<http://${req.headers.host}/api/v1/logs?after=x>; rel="next"`,
    });
    res.end(r.body);
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls: () => calls };
}

const client = () =>
  new IdentityClient({
    org: 'acme',
    auth: new SswsAuthenticator('t'),
    requestTimeoutMs: 5_000,
    policies: withPolicies({ transient: { initialMs: 1, multiplier: 1, maxMs: 1, retries: Infinity, jitter: 0 } }),
  });
const get = (url: string) => client().getPage(`${url}/api/v1/logs`, { budget: new RateBudget({ share: 1 }) });

describe('IdentityClient.getPage', () => {
  it('gives each item as the bytes sent (BOM dropped, spacing, escapes, number forms, UTF-8) beside its parsed value', async () => {
    const elements = ['{"n":1.50,"s":"a\\u00e9\\"]","k":"é€😀"}', '{ "b" : [ 1 , { "c" : "," } ] }', '7', 'null'];
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(` [ ${elements.join(' ,\n ')} ]\n`)]);
    const { url } = await serve([{ status: 200, body }]);
    const page = await get(url);
    expect(page.raw.map((b) => b.toString('utf8'))).toEqual(elements);
    expect(page.items).toEqual(elements.map((e) => JSON.parse(e) as unknown));
    expect(page.next).toBe(`${url}/api/v1/logs?after=x`);
  });

  it('keeps bytes that are not UTF-8 as sent (the sink dead-letters such a value, bytes and all)', async () => {
    const body = Buffer.concat([Buffer.from('[{"s":"'), Buffer.from([0xff]), Buffer.from('"}]')]);
    const { url } = await serve([{ status: 200, body }]);
    const page = await get(url);
    expect([...page.raw[0]!]).toEqual([...body.subarray(1, body.length - 1)]);
    expect(page.items).toEqual([{ s: '\uFFFD' }]);
  });

  it('retries a 2xx that is not one JSON array, then uses the first good reply', async () => {
    const { url, calls } = await serve([
      { status: 200, body: '{"not":"an array"}' },
      { status: 200, body: '[{"a":1},' },
      { status: 200, body: '[{"a":1}] trailing' },
      { status: 200, body: '[{"a":1}]' },
    ]);
    const page = await get(url);
    expect(page.items).toEqual([{ a: 1 }]);
    expect(calls()).toBe(4);
  });

  it('takes exactly the bodies one JSON.parse of the whole body takes (each element is parsed on its own)', async () => {
    const bodies = [
      '[]',
      ' [ ] ',
      '[{"a":1} , 2,"s" ,null,[3,{"b":"],}"}]]',
      '[{"a":1},{"b":2]',
      '[[1},2]',
      '[{"a":1}{"b":2}]',
      '[1 2]',
      '[{"a":01}]',
      '[{"a":"\\x"}]',
      '[tru]',
      '["\\u12"]',
      '[{"a":1},]',
    ];
    for (const body of bodies) {
      let whole: unknown;
      try {
        whole = JSON.parse(body) as unknown;
      } catch {
        whole = null;
      }
      const { url, calls } = await serve([
        { status: 200, body },
        { status: 200, body: '["retried"]' },
      ]);
      const page = await get(url);
      expect(page.items, body).toEqual(Array.isArray(whole) ? whole : ['retried']);
      expect(calls(), body).toBe(Array.isArray(whole) ? 1 : 2);
      await new Promise((r) => server!.close(r));
      server = null;
    }
  });

  it('reads an error reply as text, BOM and all, to classify it', async () => {
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('{"errorCode":"E0000006","errorSummary":"You do not have permission"}'),
    ]);
    const { url } = await serve([{ status: 403, body }]);
    const err = await get(url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HooklogError);
    expect((err as HooklogError).message).toContain('E0000006: You do not have permission');
  });
});
