/**
 * First frames for bench/console --frames: each page opened in a real headless
 * Chromium (Debian's, as the browser tests use), timed from navigation until
 * what the page is for is drawn and a frame has been painted after it: the
 * time an analyst waits. Signed in as an analyst of the attacked org with a
 * session minted by the console's own session keys (the sign-in dance is not
 * what is measured), fresh for each page so no page outlives the regrant period.
 */
import type { Locator, Page } from 'playwright-core';
import type { Principal } from '../../platform/access.js';
import { SESSION_COOKIE, SessionKeys } from '../../console/session.js';
import { launchChromium } from '../../test/support/browser.js';

export interface FramePage {
  readonly name: string;
  /** The page's path and query. */
  readonly path: string;
  /** What must be drawn for the page to count as shown. */
  readonly ready: (page: Page) => Locator;
}

export interface FrameResult {
  readonly name: string;
  readonly p95: number;
  readonly max: number;
  readonly runs: number;
}

/** The 95th percentile (nearest rank) of `xs`. */
export function p95(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.95) - 1)] ?? NaN;
}

export async function measureFrames(
  base: string,
  session: { readonly secret: string; readonly principal: Principal },
  pages: readonly FramePage[],
  runs: number,
): Promise<FrameResult[]> {
  const browser = await launchChromium();
  const keys = new SessionKeys(session.secret, 60);
  const results: FrameResult[] = [];
  try {
    for (const p of pages) {
      const { token } = await keys.issue(session.principal, Date.now());
      await browser.clearCookies();
      await browser.addCookies([{ name: SESSION_COOKIE, value: token, url: base }]);
      const tab = await browser.newPage();
      const once = async (): Promise<number> => {
        const started = performance.now();
        const res = await tab.goto(`${base}${p.path}`);
        if (res?.status() !== 200) throw new Error(`${p.path} answered ${res?.status()}`);
        await p.ready(tab).first().waitFor({ timeout: 120_000 });
        await tab.evaluate('new Promise((r) => requestAnimationFrame(() => r(undefined)))');
        return performance.now() - started;
      };
      await once(); // warm-up: the bundle cached, the store's caches warm
      const times: number[] = [];
      for (let i = 0; i < runs; i++) times.push(await once());
      await tab.close();
      results.push({ name: p.name, p95: p95(times), max: Math.max(...times), runs });
    }
  } finally {
    await browser.close();
  }
  return results;
}
