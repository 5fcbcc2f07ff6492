/**
 * The alert list at incident scale, in a real headless Chromium (issue 36,
 * "Lists that scale"): pages of a snapshot with their total, next and previous,
 * alerts arriving meanwhile announced as new rather than shifting the pages;
 * sort by a column heading, both ways; the assignee filter with "mine" and the
 * text filter, all in the URL; keys as links to the user page, times with their
 * zone; and "select all N matching", confirmed with its count, changed on the
 * server, with the server's reason when it refuses. Org B's alerts never show.
 * Screenshots go to .cache/console-screenshots/ (and to docs/screenshots/ with
 * HOOKLOG_UPDATE_SCREENSHOTS=1), as in console.browser.test.ts.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../test/support/browser.js';
import { REPO_DIR } from '../test/support/cli.js';
import { waitFor } from '../test/support/wait.js';
import {
  alertRows,
  chTime,
  insertAlerts,
  ORG_A,
  ORG_B,
  postChange,
  RULE_ID,
  signIn,
  startConsoleWorld,
  USERS,
  type ConsoleWorld,
} from './testing.js';

const SHOTS = [join(REPO_DIR, '.cache', 'console-screenshots')];
if (process.env.HOOKLOG_UPDATE_SCREENSHOTS === '1') SHOTS.push(join(REPO_DIR, 'docs', 'screenshots'));

/** Alerts of the test rule (its group-by is the user's login, so keys link to user pages). */
const N = 120;
const FLOOD_TITLE = 'Failed sign-in';
let w: ConsoleWorld;
let browser: BrowserContext;
let page: Page;

async function shot(name: string): Promise<void> {
  for (const dir of SHOTS) {
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: join(dir, `${name}.png`) });
  }
}

/** The list's status line ("Alerts 1–50 of 120, as of … UTC."), once it is drawn. */
async function status(): Promise<string> {
  const line = page.locator('p.list-status');
  // Naming what was there instead: an error box, another page.
  await line.waitFor().catch(async (e: unknown) => {
    throw new Error(`${String(e)}; at ${page.url()}: ${(await page.content()).slice(0, 1500)}`);
  });
  return line.innerText();
}

/** Polls wait this long: a page's data comes in seconds on a busy 2-core machine, not the default second. */
const POLL = { timeout: 30_000 };

const param = (name: string) => new URL(page.url()).searchParams.get(name);

beforeAll(async () => {
  w = await startConsoleWorld();
  await insertAlerts(w, [
    ...alertRows(ORG_A, RULE_ID, FLOOD_TITLE, N, (i) => ({
      event_count: i + 1,
      group_key: JSON.stringify([`victim${i}@a.example`]),
    })),
    ...alertRows(ORG_A, 'lists.test.other', 'Needle rule', 3, (i) => ({ severity: 'high', event_count: 500 + i })),
    ...alertRows(ORG_B, RULE_ID, FLOOD_TITLE, 40, (i) => ({ group_key: JSON.stringify([`bee${i}@b.example`]) })),
  ]);
  browser = await launchChromium();
  page = await browser.newPage();
  await page.goto(`${w.url}/console/alerts`);
  await page.waitForURL(/\/oauth2\/v1\/authorize/);
  await page.getByLabel('Username').fill(USERS.alice.login);
  await page.getByLabel('Password').fill(USERS.alice.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${w.url}/console/alerts`);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await w?.stop();
});

describe('the alert list at scale', () => {
  it('pages with a total that holds while alerts arrive, and announces the new ones', async () => {
    await page.goto(`${w.url}/console/alerts?limit=50`);
    expect(await status()).toMatch(/^Alerts 1–50 of 123, as of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.$/);
    expect(await page.getByRole('row').count()).toBe(51);
    expect(await page.locator('main').innerText()).not.toContain('@b.example');
    // Times carry their zone; keys are links to the user page, never JSON.
    const row = page.getByRole('row').nth(1);
    expect(await row.getByRole('cell').nth(1).innerText()).toMatch(/ UTC$/);
    const key = row.getByRole('link', { name: /^victim\d+@a\.example$/ });
    expect(await key.getAttribute('href')).toMatch(new RegExp(`^/console/users/${ORG_A}/victim\\d+%40a\\.example$`));
    expect(await page.locator('main').innerText()).not.toContain('["');
    await shot('alerts-paged');

    await page.getByRole('link', { name: 'Next page' }).click();
    await expect.poll(status, POLL).toMatch(/^Alerts 51–100 of 123,/);
    expect(param('page')).toMatch(/^[A-Za-z0-9_-]+$/);
    const second = await page.getByRole('row').allInnerTexts();
    // Three alerts arrive, newer than all: the pages of this snapshot stay where they were.
    await insertAlerts(
      w,
      alertRows(ORG_A, RULE_ID, FLOOD_TITLE, 3, () => ({ event_time: chTime(Date.now()) })),
    );
    await page.getByRole('link', { name: 'Next page' }).click();
    await expect.poll(status, POLL).toMatch(/^Alerts 101–123 of 123, as of .+ UTC\. 3 new alerts since: show$/);
    expect(await page.getByRole('link', { name: 'Next page' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Previous page' }).click();
    await expect.poll(status, POLL).toMatch(/^Alerts 51–100 of 123,/);
    expect(await page.getByRole('row').allInnerTexts()).toEqual(second);
    await page.getByRole('link', { name: '3 new alerts since: show' }).click();
    await expect.poll(status, POLL).toMatch(/^Alerts 1–50 of 126,/);
    expect(param('page')).toBeNull();
  });

  it('sorts by a column heading, descending then ascending, kept in the URL', async () => {
    await page.goto(`${w.url}/console/alerts?rule=${encodeURIComponent(RULE_ID)}&limit=10`);
    await status();
    await page.getByRole('link', { name: 'Sort by events, descending' }).click();
    await expect.poll(() => param('sort'), POLL).toBe('count');
    expect(param('dir')).toBe('desc');
    const counts = async () =>
      (await page.locator('tbody tr td.num').allInnerTexts()).map((t) => Number(t.replace(/,/g, '')));
    await expect.poll(counts, POLL).toEqual([120, 119, 118, 117, 116, 115, 114, 113, 112, 111]);
    await page.getByRole('link', { name: 'Sort by events, ascending' }).click();
    await expect.poll(() => param('dir'), POLL).toBe('asc');
    await expect.poll(counts, POLL).toEqual([1, 1, 2, 2, 3, 3, 4, 5, 6, 7]);
    await page.getByRole('link', { name: 'Next page' }).click();
    await expect.poll(counts, POLL).toEqual([8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
    expect(param('sort')).toBe('count');
  });

  it('filters by text and by assignee, "mine" being the signed-in analyst', async () => {
    await page.goto(`${w.url}/console/alerts`);
    await status();
    await page.getByLabel('Text', { exact: true }).fill('needle');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(status, POLL).toMatch(/^Alerts 1–3 of 3,/);
    expect(param('q')).toBe('needle');

    const ids = await waitFor(
      async () =>
        (
          await w.hooklog.store!.query<{ alert_id: string }>(
            `SELECT alert_id FROM ${w.hooklog.store!.database}.alerts WHERE rule_id = 'lists.test.other' ORDER BY alert_id`,
          )
        ).map((r) => r.alert_id),
      { until: (r) => r.length === 3, what: 'the needle alerts' },
    );
    const alice = await signIn(w, USERS.alice);
    const res = await postChange(w, alice, {
      alert_ids: ids.slice(0, 2),
      action: 'assign',
      assignee: USERS.alice.login,
    });
    expect(res.status).toBe(200);
    await page.goto(`${w.url}/console/alerts`);
    await status();
    await page.getByLabel('Assignee', { exact: true }).selectOption('mine');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(status, POLL).toMatch(/^Alerts 1–2 of 2,/);
    expect(param('assignee')).toBe('mine');
    await page.getByLabel('Assignee', { exact: true }).selectOption('none');
    await page.getByLabel('Text', { exact: true }).fill('needle');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(status, POLL).toMatch(/^Alerts 1–1 of 1,/);
  });

  it('selects all N matching, confirms the count, and changes them on the server', async () => {
    await page.goto(`${w.url}/console/alerts?rule=${encodeURIComponent(RULE_ID)}&limit=20`);
    expect(await status()).toMatch(/^Alerts 1–20 of 123,/);
    await page.getByRole('button', { name: 'Select all 123 matching' }).click();
    await page.getByRole('group', { name: 'Change all 123 matching alerts' }).waitFor();
    expect(await page.getByLabel('Action').locator('option').allInnerTexts()).toEqual([
      'Acknowledge',
      'Close',
      'Assign',
      'Comment',
    ]);
    await page.getByLabel('Action').selectOption('acknowledge');
    await page.getByRole('button', { name: 'Apply to all 123' }).click();
    await page.getByText('Acknowledge all 123 alerts that match this filter?').waitFor();
    await shot('alerts-select-all');
    await page.getByRole('button', { name: 'Confirm: change 123 alerts' }).click();
    // Done: the selection is cleared. The answer waits (bounded) until the change is readable; past the bound (a
    // busy machine) a reload shows it.
    await page.getByRole('group', { name: 'Change 0 selected alerts' }).waitFor();
    await expect
      .poll(async () => {
        await page.reload();
        await status();
        return page.getByRole('cell', { name: 'acknowledged', exact: true }).count();
      }, POLL)
      .toBe(20);
    const store = w.hooklog.store!;
    const rows = await waitFor(
      () =>
        store.query<{ org: string; n: string }>(
          `SELECT org, count() AS n FROM ${store.database}.alert_states WHERE action = 'acknowledge' GROUP BY org`,
        ),
      { until: (r) => Number(r[0]?.n) >= 123, what: 'the acknowledgements' },
    );
    expect(rows).toEqual([{ org: ORG_A, n: '123' }]);

    // Now every one is acknowledged: Acknowledge is not offered to them.
    await page.getByRole('button', { name: 'Select all 123 matching' }).click();
    expect(await page.getByLabel('Action').locator('option').allInnerTexts()).toEqual([
      'Close',
      'Reopen',
      'Assign',
      'Comment',
    ]);
  });

  it("shows the server's reason when it refuses some of a change by filter", async () => {
    await page.goto(`${w.url}/console/alerts?rule=${encodeURIComponent(RULE_ID)}&limit=20`);
    await status();
    await page.getByRole('button', { name: 'Select all 123 matching' }).click();
    await page.getByLabel('Action').selectOption('close');
    await page.getByLabel('Resolution').selectOption('benign');
    // Meanwhile someone else closes one of them.
    const other = await signIn(w, USERS.alice);
    const one = (await page.getByRole('checkbox').first().getAttribute('aria-label'))!.replace('Select alert ', '');
    const res = await postChange(w, other, { alert_ids: [one], action: 'close', resolution: 'true_positive' });
    expect(res.status).toBe(200);
    await page.getByRole('button', { name: 'Apply to all 123' }).click();
    await page.getByRole('button', { name: 'Confirm: change 123 alerts' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'some alerts cannot take this change: the alert is already closed (1 of 123)' })
      .waitFor();
  });
});
