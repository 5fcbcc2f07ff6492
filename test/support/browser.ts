/**
 * A real headless Chromium for browser tests: Debian's `chromium` package
 * (/usr/bin/chromium, or HOOKLOG_CHROMIUM), driven by playwright-core, never a
 * downloaded browser. Each launch gets a fresh profile directory.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = process.env.HOOKLOG_CHROMIUM ?? '/usr/bin/chromium';

/** A browser with a fresh profile (playwright passes it as --user-data-dir), downloads accepted. */
export async function launchChromium(): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does it)`);
  const profile = mkdtempSync(join(tmpdir(), 'hooklog-chromium-'));
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1180, height: 760 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
