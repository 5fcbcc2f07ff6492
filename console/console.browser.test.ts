/**
 * The console in a real headless Chromium (Debian's package, playwright-core):
 * an analyst signs in through the simulated org's sign-in page, closes an
 * alert as a false positive, opens the user page from it, runs a query and
 * sees its chart, exports CSV. The events carry script and markup in every
 * free-text field (user agent, display name, login, country): no page runs
 * any of it, and the CSV export neutralises cells that a spreadsheet would
 * run as formulas. Screenshots go to .cache/console-screenshots/ (and to
 * docs/screenshots/ with HOOKLOG_UPDATE_SCREENSHOTS=1: the ones docs/analyze/console.md shows).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../test/support/browser.js';
import { REPO_DIR } from '../test/support/cli.js';
import { identityKey, identityTopic, type IdentityUser } from '../schemas/identity.js';
import { deliverAndAlert, failedSignIn, ORG_A, startConsoleWorld, USERS, type ConsoleWorld } from './testing.js';

const SHOTS = [join(REPO_DIR, '.cache', 'console-screenshots')];
if (process.env.HOOKLOG_UPDATE_SCREENSHOTS === '1') SHOTS.push(join(REPO_DIR, 'docs', 'screenshots'));

/** Markup and script in every field an attacker controls; each would set window.__pwned if it ran. */
const XSS = {
  userAgent: `<img src=x onerror="window.__pwned='ua'">Mozilla/5.0`,
  displayName: `<script>window.__pwned='name'</script>Eve`,
  login: `eve"><svg onload="window.__pwned='login'">@a.example`,
  country: `<iframe src="javascript:window.top.__pwned='country'"></iframe>`,
};
/** Logins a spreadsheet would run as formulas (CSV injection). */
const FORMULAS = [
  `=HYPERLINK("http://x.example","y")`,
  `+1+cmd|' /C calc'!A0`,
  `-2+3@a.example`,
  `@SUM(1+1)*cmd|'/C calc'!A0`,
];
const VICTIM = 'frank@a.example';

let w: ConsoleWorld;
let browser: BrowserContext;
let page: Page;
const dialogs: string[] = [];

/** RFC 4180, as a spreadsheet reads it: rows of cells. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += ch;
  }
  return rows;
}

async function shot(name: string): Promise<void> {
  for (const dir of SHOTS) {
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: join(dir, `${name}.png`) });
  }
}

/** Nothing an event carried ran: no marker, no dialog. */
async function nothingRan(where: string): Promise<void> {
  expect(await page.evaluate('window.__pwned'), where).toBeUndefined();
  expect(dialogs, where).toEqual([]);
}

beforeAll(async () => {
  w = await startConsoleWorld();
  await deliverAndAlert(w, ORG_A, [
    failedSignIn(VICTIM, { ip: '192.0.2.44' }),
    failedSignIn(VICTIM, { ip: '192.0.2.44' }),
    failedSignIn(XSS.login, { userAgent: XSS.userAgent, displayName: XSS.displayName, country: XSS.country }),
    ...FORMULAS.map((login) => failedSignIn(login, { userAgent: XSS.userAgent })),
  ]);
  browser = await launchChromium();
  page = await browser.newPage();
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await w?.stop();
});

describe('the console in Chromium', () => {
  it('signs in through the identity service', async () => {
    await page.goto(`${w.url}/console/alerts`);
    await page.waitForURL(/\/oauth2\/v1\/authorize/);
    await page.getByLabel('Username').fill(USERS.alice.login);
    await page.getByLabel('Password').fill(USERS.alice.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${w.url}/console/alerts`);
    await page.getByRole('table').waitFor();
    await expect.poll(() => page.getByText(`${USERS.alice.login} (analyst; ${ORG_A})`).count()).toBe(1);
    await shot('alerts');
    await nothingRan('alerts list');
  });

  it('closes an alert as a false positive and opens the user page from it', async () => {
    const row = page.getByRole('row').filter({ hasText: VICTIM }).first();
    await row.getByRole('link', { name: 'Failed sign-in' }).click();
    await page.waitForURL(/\/console\/alerts\/[0-9a-f]{32}$/);
    await page.getByLabel('Action').selectOption('close');
    await page.getByLabel('Resolution').selectOption('false_positive');
    await page.getByLabel('Note').fill('the user mistyped; confirmed by phone');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('definition').filter({ hasText: 'closed (false_positive)' }).waitFor();
    await page.getByRole('cell', { name: 'the user mistyped; confirmed by phone' }).waitFor();
    await shot('alert');
    await nothingRan('alert page');

    await page.getByRole('link', { name: VICTIM }).first().click();
    await page.waitForURL(new RegExp(`/console/users/${ORG_A}/${encodeURIComponent(VICTIM)}$`));
    await page.getByRole('heading', { name: `User ${VICTIM}` }).waitFor();
    await page.locator('.chart canvas').first().waitFor();
    await page.getByRole('table', { name: 'IPs' }).getByRole('link', { name: '192.0.2.44' }).waitFor();
    await shot('user');
    await nothingRan('user page');
    // Every figure links to the events it counts: the country's count lists the user's events there.
    await page.getByRole('table', { name: 'Countries' }).getByRole('link', { name: '2' }).first().click();
    await page.waitForURL(/\/console\/events\?/);
    await expect.poll(() => page.getByRole('row').count()).toBe(3);
  });

  it("shows the user's status, groups and admin roles from the identity sync, as text", async () => {
    // The records the identity sync writes (schemas/identity.ts), stored by the sink's identity pipeline.
    const prefix = w.hooklog.topics.logs.slice(0, -'.logs'.length);
    const frank: IdentityUser = {
      org: ORG_A,
      user_id: '00ufrank',
      login: VICTIM,
      status: 'LOCKED_OUT',
      groups: [
        { id: '00gfin', name: 'Finance' },
        { id: '00gxss', name: XSS.displayName },
      ],
      admin_roles: ['HELP_DESK_ADMIN', 'ORG_ADMIN'],
      truncated: false,
      last_updated: new Date(Date.now() - 3_600_000).toISOString(),
      synced_at: new Date().toISOString(),
    };
    // Another org's user of the same login: never shown on this org's page.
    const other: IdentityUser = { ...frank, org: 'other-org', status: 'SUSPENDED', admin_roles: ['SUPER_ADMIN'] };
    await w.hooklog.stream.append(
      identityTopic(prefix),
      [frank, other].map((u) => ({
        key: identityKey(u.org, u.user_id),
        value: Buffer.from(JSON.stringify(u)),
        headers: {},
      })),
    );
    await page.goto(`${w.url}/console/users/${ORG_A}/${encodeURIComponent(VICTIM)}`);
    await page.getByRole('heading', { name: `User ${VICTIM}` }).waitFor();
    const facts = page.locator('#identity');
    // The sink stores the records within its batch wait: reload until the page shows them.
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.getByRole('heading', { name: `User ${VICTIM}` }).waitFor();
          // The heading comes from the URL, before the data: wait for the directory block (synced or not).
          await facts.waitFor();
          return facts.locator('[data-field="status"]').count();
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(1);
    expect(await facts.locator('[data-field="status"]').innerText()).toBe('LOCKED_OUT');
    expect(await facts.locator('[data-field="admin-roles"] li').allInnerTexts()).toEqual([
      'HELP_DESK_ADMIN',
      'ORG_ADMIN',
    ]);
    expect(await facts.locator('[data-field="groups"] li').allInnerTexts()).toEqual(['Finance', XSS.displayName]);
    expect(await facts.innerText()).not.toContain('SUPER_ADMIN');
    await nothingRan('user page with identity');
    expect(await page.locator('main script').count()).toBe(0);
  });

  it('runs a query, shows its chart and exports CSV with formulas neutralised', async () => {
    const since = new Date(Date.now() - 86_400_000).toISOString().slice(0, 19) + 'Z';
    const until = new Date(Date.now() + 3600_000).toISOString().slice(0, 19) + 'Z';
    await page.goto(`${w.url}/console/queries/signin_failures_by_user`);
    await page.getByLabel(/^since/).fill(since);
    await page.getByLabel(/^until/).fill(until);
    await page.getByRole('button', { name: 'Run' }).click();
    await page.waitForURL(/org=/);
    await page.locator('.chart canvas').first().waitFor();
    await page.getByRole('cell', { name: VICTIM }).waitFor();
    await shot('query');
    await nothingRan('query page');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Export CSV' }).click(),
    ]);
    const users = parseCsv(readFileSync((await download.path())!, 'utf8'))
      .slice(1)
      .map((row) => row[0]!);
    for (const f of FORMULAS) expect(users).toContain(`'${f}`);
    for (const u of users) expect(u, u).not.toMatch(/^[=+\-@]/);
    expect(users).toContain(VICTIM);
  });

  it('renders attacker-controlled fields as text on every page', async () => {
    const hostile = `/console/users/${ORG_A}/${encodeURIComponent(XSS.login)}`;
    const pages = [
      `/console/alerts`,
      hostile,
      `/console/ips/203.0.113.7?org=${ORG_A}`,
      `/console/events?org=${ORG_A}&user=${encodeURIComponent(XSS.login)}`,
      `/console/status`,
      `/console/coverage?org=${ORG_A}`,
      `/console/queries/signin_failures_by_ip?org=${ORG_A}&since=${encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString())}&until=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
    ];
    for (const p of pages) {
      await page.goto(`${w.url}${p}`);
      await page.locator('main h1').waitFor();
      await page.waitForLoadState('networkidle');
      await nothingRan(p);
    }
    // The hostile values are there, as text.
    await page.goto(`${w.url}${hostile}`);
    await page.getByRole('heading', { name: `User ${XSS.login}` }).waitFor();
    await page.getByRole('cell', { name: XSS.country }).first().waitFor();
    await page.goto(`${w.url}/console/events?org=${ORG_A}&user=${encodeURIComponent(XSS.login)}`);
    await page.getByRole('cell', { name: XSS.login }).first().waitFor();
    await page.getByRole('button', { name: 'Show raw' }).first().click();
    await expect.poll(() => page.locator('pre.raw').innerText()).toContain(XSS.displayName);
    await shot('events');
    await nothingRan('raw event');
    expect(await page.locator('main img, main script, main iframe, main svg').count()).toBe(0);
  });

  it('shows when the status was checked and the last success beside the position age', async () => {
    await page.goto(`${w.url}/console/status`);
    await page.getByRole('heading', { name: 'Status' }).waitFor();
    await expect.poll(() => page.locator('main').innerText()).toMatch(/Checked at \d{4}-\d\d-\d\dT\S+Z\./);
    await page.getByRole('columnheader', { name: 'last_success_age_s' }).waitFor();
    await page.getByRole('columnheader', { name: 'cursor_age_s' }).waitFor();
    // Which way each poller reads: a reconcile watch's line is labelled so (issue 41, item 6 follow-up).
    await page.getByRole('columnheader', { name: 'mode', exact: true }).waitFor();
    await expect.poll(() => page.locator('main').innerText()).toContain('Mode reconcile is the System Log watch');
  });

  it("shows which event types the coverage counts: the org's hooks'", async () => {
    await page.goto(`${w.url}/console/coverage?org=${ORG_A}`);
    await page.getByRole('heading', { name: 'Hook coverage' }).waitFor();
    await expect
      .poll(() => page.locator('main').innerText())
      .toMatch(/Counted: the \d+ event type\(s\) the org's hooks delivered in the range\./);
  });

  it('is usable from the keyboard: a skip link, labelled controls, focus that moves', async () => {
    await page.goto(`${w.url}/console/alerts`);
    await page.getByRole('table').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to content');
    for (const label of ['Org', 'Rule', 'Severity', 'Status', 'Since', 'Until', 'Action', 'Note'])
      expect(await page.getByLabel(label, { exact: true }).count(), label).toBeGreaterThan(0);
    await page.getByLabel('Status', { exact: true }).focus();
    await page.keyboard.press('Tab');
    expect(await page.evaluate("document.activeElement.getAttribute('name')")).toBe('since');
  });
});
