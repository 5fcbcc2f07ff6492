/**
 * Saved searches on the Search page, in Chromium: an analyst saves the search on screen, opens the Search page
 * afresh (a new page, a reload), reopens it from the org's list and gets the same filter, range, columns and
 * results; a hostile name (a right-to-left override, a zero-width space, markup, 10 KB) is shown bounded and
 * visible, never obeyed; a deleted one leaves the list. And the search's exports keep orgs apart: the CSV and
 * JSON of org A's search hold none of org B's events, though the same user has events in both.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_A, KEY_ALL, ORG_A, ORG_B, USERS } from './testing.js';
import type { ConsoleWorld } from './testing.js';
import { OTHER, startSearchWorld, VICTIM } from './search-world.js';

const FILTER = `actor.alternateId eq "${VICTIM}"`;
/** Drawn, not obeyed: an override that would reverse the text, a zero-width space, markup, and 10 KB of it. */
const HOSTILE = `\u202Egnp.exe<script>window.__pwned='name'</script>\u200B${'x'.repeat(10 * 1024)}`;

let w: ConsoleWorld;
let browser: BrowserContext;
let page: Page;
let dialogs: string[];

beforeAll(async () => {
  ({ w, browser, page, dialogs } = await startSearchWorld());
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await w?.stop();
});

/** A page loads its data after it shows: on a busy machine, well past poll's default second. */
const SLOW = { timeout: 30_000 };
const since = new Date(Date.now() - 86_400_000).toISOString();
const until = new Date(Date.now() + 3_600_000).toISOString();
const bodyRows = (p: Page) =>
  p
    .getByRole('table', { name: /events \(newest first\)/ })
    .locator('tbody tr')
    .count();
const savedTable = (p: Page) => p.getByRole('table', { name: 'Saved searches' });
const headers = (p: Page) =>
  p
    .getByRole('table', { name: /events \(newest first\)/ })
    .locator('thead th')
    .allInnerTexts();

describe('saved searches on the Search page', () => {
  it('saves the search on screen and reopens it whole from the list, in a new page and after a reload', async () => {
    const url = `${w.url}/console/search?${new URLSearchParams({ org: ORG_A, filter: FILTER, since, until, fields: 'eventType,client.ipAddress', facets: 'client.ipAddress' })}`;
    await page.goto(url);
    await page.waitForURL(/\/oauth2\/v1\/authorize/);
    await page.getByLabel('Username').fill(USERS.alice.login);
    await page.getByLabel('Password').fill(USERS.alice.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\/search\?/);
    await expect.poll(() => bodyRows(page), SLOW).toBe(3);
    const shownHeaders = await headers(page);

    await page.getByLabel('Name', { exact: true }).fill('Frank, failing');
    // The page's own dates are offered first: the range as shown.
    expect(await page.getByLabel('Range to save').inputValue()).toBe('shown');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await savedTable(page).getByRole('link', { name: 'Frank, failing' }).waitFor(SLOW);

    // A new page on the Search page with nothing in its URL: the org's saved searches are listed there.
    const fresh = await browser.newPage();
    await fresh.goto(`${w.url}/console/search?org=${ORG_A}`);
    await expect.poll(() => bodyRows(fresh), SLOW).toBe(5);
    await savedTable(fresh).getByRole('link', { name: 'Frank, failing' }).click();
    await fresh.waitForURL(/filter=/);
    const reopened = new URL(fresh.url()).searchParams;
    expect(Object.fromEntries(reopened)).toEqual({
      org: ORG_A,
      filter: FILTER,
      since: new Date(since).toISOString(),
      until: new Date(until).toISOString(),
      fields: 'eventType,client.ipAddress',
      facets: 'client.ipAddress',
    });
    await expect.poll(() => bodyRows(fresh), SLOW).toBe(3);
    expect(await fresh.getByLabel('Filter', { exact: true }).inputValue()).toBe(FILTER);
    expect(await fresh.getByLabel('Since').inputValue()).toBe(new Date(since).toISOString());
    expect(await headers(fresh)).toEqual(shownHeaders);
    // The facets chosen, and only them.
    await fresh
      .getByRole('table', { name: 'client.ipAddress' })
      .getByRole('cell', { name: '192.0.2.44', exact: true })
      .waitFor();
    expect(await fresh.getByRole('table', { name: 'actor.alternateId' }).count()).toBe(0);
    // Reloaded, the list and the search are the same.
    await fresh.reload();
    await expect.poll(() => bodyRows(fresh), SLOW).toBe(3);
    await savedTable(fresh).getByRole('link', { name: 'Frank, failing' }).waitFor(SLOW);
    await fresh.close();
  });

  it('saves a relative range, which counts back from when it is opened', async () => {
    await page.goto(
      `${w.url}/console/search?${new URLSearchParams({ org: ORG_A, filter: `actor.alternateId eq "${OTHER}"` })}`,
    );
    await expect.poll(() => bodyRows(page), SLOW).toBe(2);
    expect(await page.getByLabel('Range to save').inputValue()).toBe('24h');
    await page.getByLabel('Range to save').selectOption({ label: 'last 7 days' });
    await page.getByLabel('Name', { exact: true }).fill('Grace, this week');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const row = savedTable(page).getByRole('row').filter({ hasText: 'Grace, this week' });
    await expect.poll(() => row.innerText(), SLOW).toContain('last 7 days');
    const before = Date.now();
    await row.getByRole('link', { name: 'Grace, this week' }).click();
    await page.waitForURL(/filter=/);
    const opened = Date.parse(new URL(page.url()).searchParams.get('since') ?? '');
    expect(Math.abs(opened - (before - 7 * 86_400_000))).toBeLessThan(60_000);
    await expect.poll(() => bodyRows(page), SLOW).toBe(2);
  });

  it('shows a hostile name bounded and visible, and deletes it', async () => {
    await page.goto(`${w.url}/console/search?org=${ORG_A}`);
    await expect.poll(() => bodyRows(page), SLOW).toBe(5);
    await page.getByLabel('Name', { exact: true }).fill(HOSTILE);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const row = savedTable(page).getByRole('row').filter({ hasText: '⟨U+202E⟩gnp.exe<script>' });
    await row.waitFor(SLOW);
    const cell = await row.getByRole('cell').first().innerText();
    // Drawn: the override and the zero-width space are visible marks, the markup is text.
    expect(cell).toContain("⟨U+202E⟩gnp.exe<script>window.__pwned='name'</script>⟨U+200B⟩");
    // Bounded: a few hundred characters of the 10 KB, and the rest on request.
    expect(cell.length).toBeLessThan(400);
    await row.getByRole('button', { name: `Show all ${HOSTILE.length.toLocaleString('en')} characters` }).waitFor();
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(dialogs).toEqual([]);

    await row.getByRole('button', { name: /^delete / }).click();
    await expect.poll(() => row.count(), SLOW).toBe(0);
    await savedTable(page).getByRole('link', { name: 'Frank, failing' }).waitFor();
  });

  it("keeps org B's events out of org A's exports, CSV and JSON", async () => {
    const get = (key: string, org: string, path: string) =>
      fetch(`${w.url}${path}?${new URLSearchParams({ org, filter: FILTER, since, until })}`, {
        headers: { authorization: `Bearer ${key}` },
      });
    const uuids = async (key: string, org: string) =>
      ((await (await get(key, org, '/console/api/search')).json()) as { rows: Array<{ uuid: string }> }).rows.map(
        (r) => r.uuid,
      );
    const ofB = await uuids(KEY_ALL, ORG_B);
    expect(ofB).toHaveLength(1);
    const json = await uuids(KEY_A, ORG_A);
    expect(json).toHaveLength(3);
    expect(json.filter((u) => ofB.includes(u))).toEqual([]);
    const csv = (await (await get(KEY_A, ORG_A, '/console/api/search/csv')).text()).split('\r\n').filter((l) => l);
    expect(csv).toHaveLength(4);
    expect(csv.filter((l) => ofB.some((u) => l.includes(u)))).toEqual([]);
    // The key scoped to org A reads neither org B's export nor every org's.
    for (const org of [ORG_B, '*'])
      for (const path of ['/console/api/search', '/console/api/search/csv'])
        expect((await get(KEY_A, org, path)).status, `${org} ${path}`).toBe(404);
  });
});
