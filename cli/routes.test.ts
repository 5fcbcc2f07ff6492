import { describe, expect, it } from 'vitest';
import { everything } from '../docs/generate/routes.js';
import type { AppDeps } from './app.js';
import { banner, servedUrls } from './routes.js';

const BASE = 'http://127.0.0.1:8080';

describe('the routes table (cli/routes.ts): what the start banner prints', () => {
  it('lists every URL served with every part, one per configured hook', () => {
    const urls = servedUrls(everything(), BASE);
    expect(urls.map((u) => `${u.name} ${u.url}`)).toEqual([
      `health ${BASE}/healthz`,
      `health ${BASE}/readyz`,
      `event hook ${BASE}/hooks/events/h`,
      `SET transmitter ${BASE}/.well-known/ssf-configuration`,
      `SET transmitter ${BASE}/.well-known/jwks.json`,
      `query API ${BASE}/api/queries`,
      `console ${BASE}/console`,
      `metrics ${BASE}/metrics`,
    ]);
    expect(banner(urls)).toContain(
      `  event hook       ${BASE}/hooks/events/h  ("h", org o, auth header authorization)\n`,
    );
  });

  it('lists only what a process serves: without the receivers role, no hooks, query API or console', () => {
    const { tokenHooks: _t, ssf: _s, store: _st, console: _c, ...rest } = everything();
    const pollers: AppDeps = { ...rest, receivers: false };
    expect(servedUrls(pollers, BASE).map((u) => u.url)).toEqual([
      `${BASE}/healthz`,
      `${BASE}/readyz`,
      `${BASE}/.well-known/ssf-configuration`,
      `${BASE}/.well-known/jwks.json`,
      `${BASE}/metrics`,
    ]);
  });
});
