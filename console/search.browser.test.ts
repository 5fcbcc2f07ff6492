/**
 * The Search page in Chromium: an analyst searches one org's events, the
 * state lives in the URL, a facet value narrows the search (include) or
 * leaves it out (exclude), values carrying markup stay text, CSV exports.
 * And its API keeps orgs apart: another org, or `*` for a key scoped to
 * orgs, is 404; facet counts hold only the org's own events.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_DIR } from '../test/support/cli.js';
import { failedSignIn, KEY_A, KEY_ALL, ORG_A, ORG_B, USERS } from './testing.js';
import type { ConsoleWorld } from './testing.js';
import { startSearchWorld, VICTIM } from './search-world.js';

/** As console.browser.test.ts: .cache/, and docs/screenshots/ with HOOKLOG_UPDATE_SCREENSHOTS=1. */
const SHOTS = [join(REPO_DIR, '.cache', 'console-screenshots')];
if (process.env.HOOKLOG_UPDATE_SCREENSHOTS === '1') SHOTS.push(join(REPO_DIR, 'docs', 'screenshots'));
const HOSTILE = `<img src=x onerror="window.__pwned='login'">@a.example`;

let w: ConsoleWorld;
let browser: BrowserContext;
let page: Page;
let dialogs: string[];

beforeAll(async () => {
  ({ w, browser, page, dialogs } = await startSearchWorld([failedSignIn(HOSTILE)]));
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await w?.stop();
});

/** A page loads its data after it shows: on a busy machine, well past poll's default second. */
const SLOW = { timeout: 30_000 };
const since = () => new Date(Date.now() - 86_400_000).toISOString();
/** The events table's rows (the chart's legend is a table too). */
const bodyRows = () =>
  page
    .getByRole('table', { name: /events \(newest first\)/ })
    .locator('tbody tr')
    .count();

describe('the Search page', () => {
  it('searches, narrows and excludes by a facet value, with the state in the URL', async () => {
    const url = `${w.url}/console/search?org=${ORG_A}&since=${encodeURIComponent(since())}&filter=${encodeURIComponent('eventType eq "user.session.start"')}`;
    await page.goto(url);
    await page.waitForURL(/\/oauth2\/v1\/authorize/);
    await page.getByLabel('Username').fill(USERS.alice.login);
    await page.getByLabel('Password').fill(USERS.alice.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\/search\?/);
    await expect.poll(bodyRows, SLOW).toBe(6);
    await page
      .getByRole('table', { name: 'actor.alternateId' })
      .getByRole('cell', { name: VICTIM, exact: true })
      .waitFor();
    await page.locator('.chart canvas').first().waitFor();
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    // Facet counts are this org's: the victim's one event in org B is not counted.
    const victimRow = page
      .getByRole('table', { name: 'actor.alternateId' })
      .getByRole('row')
      .filter({ hasText: VICTIM });
    await expect.poll(() => victimRow.getByRole('cell').nth(1).innerText(), SLOW).toBe('3');

    for (const dir of SHOTS) {
      mkdirSync(dir, { recursive: true });
      await page.screenshot({ path: join(dir, 'search.png'), fullPage: true });
    }

    await page.getByRole('link', { name: `only actor.alternateId = ${VICTIM}` }).click();
    await page.waitForURL(/filter=.*frank/);
    expect(new URL(page.url()).searchParams.get('filter')).toBe(
      `(eventType eq "user.session.start") and actor.alternateId eq "${VICTIM}"`,
    );
    await expect.poll(bodyRows, SLOW).toBe(3);

    await page.goBack();
    await expect.poll(bodyRows, SLOW).toBe(6);
    await page.getByRole('link', { name: `not actor.alternateId = ${VICTIM}` }).click();
    await page.waitForURL(/filter=.*not/);
    await expect.poll(bodyRows, SLOW).toBe(3);
    await page.getByRole('cell', { name: HOSTILE, exact: true }).first().waitFor();
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(dialogs).toEqual([]);

    // Reloading the URL is the same search: the state is all there.
    await page.reload();
    await expect.poll(bodyRows, SLOW).toBe(3);

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Export CSV' }).click(),
    ]);
    const csv = readFileSync((await download.path())!, 'utf8').split('\r\n');
    expect(csv[0]).toBe('published,uuid,eventType,actor.alternateId,client.ipAddress,outcome.result,displayMessage');
    expect(csv.filter((l) => l !== '')).toHaveLength(4);
  });

  it('points at a mistyped filter', async () => {
    await page.goto(`${w.url}/console/search?org=${ORG_A}&filter=${encodeURIComponent('actr.alternateId eq "x"')}`);
    await expect
      .poll(() => page.locator('main').innerText(), SLOW)
      .toContain('filter, column 1: unknown field "actr.alternateId": did you mean "actor.alternateId"?');
  });

  it('keeps orgs apart in its API: 404 for another org and for * unless the key sees every org', async () => {
    const get = (key: string, org: string, path = '/console/api/search') =>
      fetch(`${w.url}${path}?org=${encodeURIComponent(org)}&since=${encodeURIComponent(since())}`, {
        headers: { authorization: `Bearer ${key}` },
      });
    for (const org of [ORG_B, '*']) {
      for (const path of ['/console/api/search', '/console/api/search/csv'])
        expect((await get(KEY_A, org, path)).status, `${org} ${path}`).toBe(404);
    }
    const mine = (await (await get(KEY_A, ORG_A)).json()) as {
      rows: Array<{ uuid: string }>;
      facets: Array<{ field: string; values: Array<{ value: string; n: number }> }>;
    };
    expect(mine.rows).toHaveLength(6);
    const users = mine.facets.find((f) => f.field === 'actor.alternateId')!.values;
    expect(users.map((v) => v.value)).not.toContain('bob@b.example');
    const every = (await (await get(KEY_ALL, '*')).json()) as { rows: Array<{ org: string }> };
    expect(new Set(every.rows.map((r) => r.org))).toEqual(new Set([ORG_A, ORG_B]));
    expect(every.rows).toHaveLength(8);
  });
});
