/**
 * Which plain-HTTP origins can sign anyone in, asked of a real Chromium: the
 * console's cookies are always Secure (http.ts `setCookie`), so its sign-in
 * works over http:// only where the browser keeps such a cookie, and
 * console.public_url is refused elsewhere (config.ts `secureForCookies`). A
 * server writes the console's own cookie at each origin, the browser comes
 * back, and whether the cookie came with it must be what the config predicts:
 * kept on localhost and loopback addresses, dropped on this machine's
 * non-loopback address.
 */
import { type Server } from 'node:http';
import { networkInterfaces } from 'node:os';
import Koa from 'koa';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../test/support/browser.js';
import { secureForCookies } from './config.js';
import { readCookie, setCookie } from './http.js';

let server: Server;
let port: number;
let browser: BrowserContext;

/** An address of this machine that is not loopback: the "host other than localhost". */
function otherAddress(): string {
  const v4 = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal);
  if (!v4) throw new Error('this machine has no non-loopback IPv4 address to try plain HTTP from');
  return v4.address;
}

beforeAll(async () => {
  const app = new Koa();
  app.use((ctx) => {
    if (ctx.path === '/set') setCookie(ctx, 'hooklog_probe', 'kept', { path: '/', maxAgeS: 60, sameSite: 'Lax' });
    ctx.body = readCookie(ctx, 'hooklog_probe') ?? 'none';
  });
  server = app.listen(0, '0.0.0.0');
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as { port: number }).port;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
});

describe("the console's Secure cookies over plain HTTP, in Chromium", () => {
  it('come back on localhost and 127.0.0.1 but not on another host, as console.public_url checks', async () => {
    const page = await browser.newPage();
    const seen: Record<string, { kept: boolean; predicted: boolean }> = {};
    for (const host of ['localhost', '127.0.0.1', otherAddress()]) {
      const origin = `http://${host}:${port}`;
      await page.goto(`${origin}/set`);
      await page.goto(`${origin}/read`);
      seen[host] = { kept: (await page.textContent('body')) === 'kept', predicted: secureForCookies(origin) };
    }
    expect(seen).toEqual({
      localhost: { kept: true, predicted: true },
      '127.0.0.1': { kept: true, predicted: true },
      [otherAddress()]: { kept: false, predicted: false },
    });
  });
});
