/**
 * The Search pages' world for browser tests: a running console with org A's and org B's failed sign-ins (an alert
 * each), and one Chromium page that records every dialog (none may open: a value obeyed as markup would).
 */
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../test/support/browser.js';
import { deliverAndAlert, failedSignIn, ORG_A, ORG_B, startConsoleWorld, type ConsoleWorld } from './testing.js';

export const VICTIM = 'frank@a.example';
export const OTHER = 'grace@a.example';

export interface SearchWorld {
  readonly w: ConsoleWorld;
  readonly browser: BrowserContext;
  readonly page: Page;
  readonly dialogs: string[];
}

/** Org A: three failures of VICTIM, two of OTHER, and `moreA`; org B: one of VICTIM (same address), one of bob. */
export async function startSearchWorld(moreA: ReturnType<typeof failedSignIn>[] = []): Promise<SearchWorld> {
  const w = await startConsoleWorld();
  await deliverAndAlert(w, ORG_A, [
    ...[1, 2, 3].map(() => failedSignIn(VICTIM, { ip: '192.0.2.44' })),
    ...[1, 2].map(() => failedSignIn(OTHER, { ip: '198.51.100.9' })),
    ...moreA,
  ]);
  await deliverAndAlert(w, ORG_B, [failedSignIn(VICTIM, { ip: '192.0.2.44' }), failedSignIn('bob@b.example')]);
  const browser = await launchChromium();
  const page = await browser.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return { w, browser, page, dialogs };
}
