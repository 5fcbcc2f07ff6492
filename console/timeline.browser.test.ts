/**
 * An alert's timeline in Chromium: the analyst opens an alert, sees what the
 * same user and the same IP did around it grouped by session, and follows a
 * session and an event into the Search page, which shows them; another org's
 * events stay out; the user and IP pages link to their search.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../test/support/browser.js';
import { deliverAndAlert, deliverEvents, failedSignIn, ORG_A, ORG_B, startConsoleWorld, USERS } from './testing.js';
import type { ConsoleWorld } from './testing.js';

const VICTIM = 'wendy@a.example';
const NEIGHBOUR = 'xavier@a.example';
const IP = '192.0.2.88';
const HOSTILE_SESSION = `<img src=x onerror="window.__pwned='session'">`;
/** Too long for a URL: shown bounded, never put into a filter. */
const LONG_LOGIN = `${'l'.repeat(5000)}@a.example`;

let w: ConsoleWorld;
let browser: BrowserContext;
let page: Page;
let alertId: string;
let longAlertId: string;
const neighbourEvent = {
  ...failedSignIn(NEIGHBOUR, { ip: IP }),
  eventType: 'user.authentication.sso',
  authenticationContext: { externalSessionId: HOSTILE_SESSION },
};

beforeAll(async () => {
  w = await startConsoleWorld();
  await deliverEvents(w, ORG_A, [neighbourEvent]);
  const fired = { ...failedSignIn(VICTIM, { ip: IP }), authenticationContext: { externalSessionId: 'sess-w' } };
  alertId = (await deliverAndAlert(w, ORG_A, [fired]))[0]!;
  longAlertId = (await deliverAndAlert(w, ORG_A, [failedSignIn(LONG_LOGIN, { ip: '192.0.2.99' })]))[0]!;
  await deliverEvents(w, ORG_B, [{ ...failedSignIn(NEIGHBOUR, { ip: IP }), eventType: 'user.authentication.sso' }]);
  browser = await launchChromium();
  page = await browser.newPage();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await w?.stop();
});

const SLOW = { timeout: 30_000 };
const searchRows = () =>
  page
    .getByRole('table', { name: /events \(newest first\)/ })
    .locator('tbody tr')
    .count();

describe("an alert's timeline", () => {
  it('groups the user and IP events by session and pivots into Search', async () => {
    await page.goto(`${w.url}/console/alerts/${alertId}`);
    await page.waitForURL(/\/oauth2\/v1\/authorize/);
    await page.getByLabel('Username').fill(USERS.alice.login);
    await page.getByLabel('Password').fill(USERS.alice.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\/alerts\//);
    const own = page.getByRole('table', { name: 'Session sess-w: 1 events' });
    const neighbours = page.getByRole('table', { name: `Session ${HOSTILE_SESSION}: 1 events` });
    await own.waitFor(SLOW);
    await neighbours.waitFor(SLOW);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    // Org B's event of the same user and IP is not in org A's alert's timeline.
    expect(await page.getByRole('region', { name: 'Timeline' }).locator('tbody tr').count()).toBe(2);

    // The neighbour's session into Search: the filter and the timeline's range are in the URL.
    await neighbours.getByRole('link', { name: HOSTILE_SESSION }).click();
    await page.waitForURL(/\/console\/search\?/);
    const url = new URL(page.url());
    expect(url.searchParams.get('filter')).toBe(
      `authenticationContext.externalSessionId eq ${JSON.stringify(HOSTILE_SESSION)}`,
    );
    expect(url.searchParams.get('org')).toBe(ORG_A);
    expect(url.searchParams.get('since')).toMatch(/^\d{4}-\d\d-\d\dT/);
    await expect.poll(searchRows, SLOW).toBe(1);
    await page
      .getByRole('table', { name: /events \(newest first\)/ })
      .getByRole('cell', { name: neighbourEvent.uuid, exact: true })
      .waitFor(SLOW);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();

    // And one event by its id.
    await page.goBack();
    await page.getByRole('link', { name: `search event ${neighbourEvent.uuid}` }).click();
    await page.waitForURL(/filter=uuid/);
    await expect.poll(searchRows, SLOW).toBe(1);
    await page
      .getByRole('table', { name: /events \(newest first\)/ })
      .getByRole('cell', { name: NEIGHBOUR, exact: true })
      .waitFor(SLOW);
  });

  it('widens the window from the page, and the user and IP pages link to their search', async () => {
    await page.goto(`${w.url}/console/alerts/${alertId}`);
    const region = page.getByRole('region', { name: 'Timeline' });
    // Filled once the timeline is in: its arrival redraws the form.
    await expect.poll(() => region.innerText(), SLOW).toContain('±60 min');
    await page.getByLabel('Minutes each side').fill('5');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/window=5/);
    await expect.poll(() => region.innerText(), SLOW).toContain('±5 min');

    await page.goto(`${w.url}/console/users/${ORG_A}/${encodeURIComponent(VICTIM)}`);
    await page.getByRole('link', { name: 'Search these events' }).click();
    await page.waitForURL(/\/console\/search\?/);
    expect(new URL(page.url()).searchParams.get('filter')).toBe(`actor.alternateId eq "${VICTIM}"`);
    await expect.poll(searchRows, SLOW).toBe(1);

    await page.goto(`${w.url}/console/ips/${IP}?org=${ORG_A}`);
    await page.getByRole('link', { name: 'Search these events' }).click();
    await page.waitForURL(/\/console\/search\?/);
    expect(new URL(page.url()).searchParams.get('filter')).toBe(`client.ipAddress eq "${IP}"`);
    await expect.poll(searchRows, SLOW).toBe(2);
  });

  it('shows a login too long for a URL bounded, and keeps it out of every link', async () => {
    await page.goto(`${w.url}/console/alerts/${longAlertId}`);
    const region = page.getByRole('region', { name: 'Timeline' });
    await expect.poll(() => region.innerText(), SLOW).toContain('(login too long to search by)');
    expect((await region.innerText()).length).toBeLessThan(4000);
    const hrefs = await region.locator('a[href]').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    expect(hrefs.length).toBeGreaterThan(0);
    for (const h of hrefs) expect(h.length, h.slice(0, 100)).toBeLessThan(1000);
  });
});
