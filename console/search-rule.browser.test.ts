/**
 * The Search page in Chromium, past the first search: a histogram bar zooms the range to itself, and "From a
 * search to a rule" — events marked should-alert and should-not-alert (the marks kept while the filter is
 * narrowed), a group-by chosen, "Make a rule" downloads `<id>.yaml`, and the BUILT CLI
 * (`node bin/hooklog.js rules test --cases <file>`) passes it; a mark flipped against the filter is refused,
 * naming the event, and nothing downloads. Its API keeps orgs apart: another org, or another org's event, is 404.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { BrowserContext, Page } from 'playwright-core';
import { parse, parseDocument } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../test/support/browser.js';
import { REPO_DIR, runCli } from '../test/support/cli.js';
import { deliverEvents, failedSignIn, KEY_A, ORG_A, ORG_B, startConsoleWorld, USERS } from './testing.js';
import type { ConsoleWorld } from './testing.js';

const FRANK = 'frank@a.example';
const GRACE = 'grace@a.example';
const MINUTE = 60_000;
/** The range searched: two hours up to a whole minute, so the histogram has 120 one-minute buckets. */
const UNTIL = Math.floor(Date.now() / MINUTE) * MINUTE + MINUTE;
const SINCE = UNTIL - 120 * MINUTE;
/** Frank's three failures, 90 minutes before the end of the range, in one bucket. */
const EARLY = SINCE + 30 * MINUTE;
const at = (ms: number) => new Date(ms).toISOString();

const early = [1, 2, 3].map((i) => ({ ...failedSignIn(FRANK), published: at(EARLY + i * 1000) }));
const late = [1, 2].map((i) => ({ ...failedSignIn(GRACE), published: at(UNTIL - 10 * MINUTE + i * 1000) }));
const success = {
  ...failedSignIn(FRANK),
  published: at(UNTIL - 5 * MINUTE),
  outcome: { result: 'SUCCESS' },
};
const otherOrg = failedSignIn(FRANK);
/** Values and keys hostile to YAML (quotes, newlines, anchors, tags, `<<`, `{{`, bidi), outside the range searched. */
const HOSTILE_TEXT = `it's "q"\n&anchor *alias !!js/function "f()" {{ actor.alternateId }} \u202eexe.txt\u200b`;
const hostile = {
  ...failedSignIn(`"{{ x }}'\n<<: !!str\u202e@a.example`, { userAgent: HOSTILE_TEXT, displayName: HOSTILE_TEXT }),
  published: at(SINCE - 60 * MINUTE),
  debugContext: { debugData: { '<<': { merged: 'no' }, [HOSTILE_TEXT]: HOSTILE_TEXT, '? key': '- [a]: {b}' } },
};

let w: ConsoleWorld;
let browser: BrowserContext;
let page: Page;

beforeAll(async () => {
  // The CLI the test runs is the built one (node bin/hooklog.js), as users run it; .ci/run built it just before.
  const building =
    process.env.HOOKLOG_TEST_BUILT === '1'
      ? Promise.resolve()
      : promisify(execFile)('npm', ['run', 'build'], { cwd: REPO_DIR, timeout: 300_000 }).then(() => undefined);
  w = await startConsoleWorld();
  await deliverEvents(w, ORG_A, [...early, ...late, success, hostile]);
  await deliverEvents(w, ORG_B, [otherOrg]);
  browser = await launchChromium();
  page = await browser.newPage();
  await building;
}, 400_000);

afterAll(async () => {
  await browser?.close();
  await w?.stop();
});

const SLOW = { timeout: 30_000 };
const searchUrl = (filter: string) =>
  `${w.url}/console/search?${new URLSearchParams({ org: ORG_A, since: at(SINCE), until: at(UNTIL), filter })}`;
const bodyRows = () =>
  page
    .getByRole('table', { name: /events \(newest first\)/ })
    .locator('tbody tr')
    .count();
const url = () => new URL(page.url()).searchParams;

describe('the Search page, past the first search', () => {
  it('zooms the range to a histogram bar when it is clicked', async () => {
    await page.goto(searchUrl('eventType eq "user.session.start"'));
    await page.waitForURL(/\/oauth2\/v1\/authorize/);
    await page.getByLabel('Username').fill(USERS.alice.login);
    await page.getByLabel('Password').fill(USERS.alice.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\/search\?/);
    await expect.poll(bodyRows, SLOW).toBe(6);

    // The bar of Frank's three failures: bucket 30 of the 120, at its place on the time axis (first to last bucket).
    const over = page.locator('.chart .u-over').first();
    await over.waitFor();
    const box = (await over.boundingBox())!;
    await over.click({ position: { x: (box.width * 30) / 119, y: box.height / 2 } });
    await page.waitForURL((u) => u.searchParams.get('since') === at(EARLY), SLOW);
    expect(url().get('until')).toBe(at(EARLY + MINUTE));
    expect(url().get('filter')).toBe('eventType eq "user.session.start"');
    await expect.poll(bodyRows, SLOW).toBe(3);
    const users = await page
      .getByRole('table', { name: /events \(newest first\)/ })
      .locator('tbody tr')
      .allInnerTexts();
    expect(users.every((r) => r.includes(FRANK))).toBe(true);
    // The zoomed range's histogram: 1-minute buckets again, the three in the one.
    const api = (await (
      await fetch(
        `${w.url}/console/api/search?${new URLSearchParams({ org: ORG_A, since: url().get('since')!, until: url().get('until')!, filter: url().get('filter')! })}`,
        { headers: { authorization: `Bearer ${KEY_A}` } },
      )
    ).json()) as { histogram: { buckets: Array<{ t: string; n: number }> } };
    expect(api.histogram.buckets).toEqual([{ t: at(EARLY), n: 3 }]);
  });

  it('makes a rule from marked events; the built CLI passes it; a contradicting mark is refused', async () => {
    await page.goto(searchUrl('eventType eq "user.session.start"'));
    await expect.poll(bodyRows, SLOW).toBe(6);
    const mark = (name: 'should alert' | 'should not alert', uuid: string) =>
      page.getByRole('button', { name: `${name}: event ${uuid}`, exact: true }).click();
    await mark('should alert', early[0]!.uuid);
    await mark('should alert', late[0]!.uuid);
    await mark('should not alert', success.uuid);
    expect(url().get('alert')).toBe(`${early[0]!.uuid},${late[0]!.uuid}`);
    expect(url().get('quiet')).toBe(success.uuid);
    expect(
      await page.getByRole('button', { name: `should alert: event ${early[0]!.uuid}` }).getAttribute('aria-pressed'),
    ).toBe('true');

    // Narrow the filter to what should alert: the marks stay (they are in the URL the form keeps).
    const filter = 'eventType eq "user.session.start" and outcome.result eq "FAILURE"';
    await page.getByLabel('Filter', { exact: true }).fill(filter);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('filter') === filter, SLOW);
    await expect.poll(bodyRows, SLOW).toBe(5);
    expect(url().get('quiet')).toBe(success.uuid);
    await expect
      .poll(() => page.getByRole('form', { name: 'Make a rule' }).innerText(), SLOW)
      .toContain('2 marked should alert, 1 should not');

    await page.getByLabel('Rule id').fill('acme.signin.failures');
    await page.getByLabel('Group by').selectOption('actor.alternateId');
    await page.getByLabel('Threshold').fill('2');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Make a rule' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('acme.signin.failures.yaml');
    // Saved under the name the browser suggests, as a browser saves it (playwright keeps it under a random name).
    const file = join(mkdtempSync(join(tmpdir(), 'hooklog-download-')), download.suggestedFilename());
    await download.saveAs(file);
    const [rule] = parse(readFileSync(file, 'utf8')) as Array<Record<string, unknown>>;
    expect(rule).toMatchObject({
      id: 'acme.signin.failures',
      type: 'threshold',
      detection: filter,
      group_by: ['actor.alternateId'],
      threshold: 2,
      window_ms: 600_000,
    });
    // The cases carry the events as stored.
    expect((rule!.cases as Array<{ events: Array<{ event: unknown }> }>).map((c) => c.events[0]!.event)).toEqual([
      early[0],
      late[0],
      success,
    ]);

    // The file as the analyst has it, through the CLI users run (built), with a JUnit report as CI would.
    const junit = `${file}.junit.xml`;
    // From the download's folder, as the analyst would: no hooklog config there.
    const run = await runCli(
      ['rules', 'test', '--cases', file, '--require-cases', '--junit', junit],
      {},
      dirname(file),
      {
        built: true,
      },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^1 rules?, 3 cases: 3 passed, 0 failed/m);
    const report = readFileSync(junit, 'utf8');
    expect(report).toMatch(/tests="3"/);
    expect(report).toMatch(/failures="0"/);
    for (const e of [early[0]!, late[0]!, success]) expect(report).toContain(e.uuid);

    // Flip one mark against the filter: Frank's failure marked should-not-alert is refused, naming the event.
    await mark('should not alert', early[0]!.uuid);
    expect(url().get('quiet')!.split(',').sort()).toEqual([success.uuid, early[0]!.uuid].sort());
    expect(url().get('alert')).toBe(late[0]!.uuid);
    let downloaded = false;
    page.once('download', () => (downloaded = true));
    await page.getByRole('button', { name: 'Make a rule' }).click();
    const refusal = page.getByRole('form', { name: 'Make a rule' }).getByRole('alert');
    await expect
      .poll(() => refusal.innerText(), SLOW)
      .toContain(
        `event ${early[0]!.uuid} is marked "should not alert", but the rule alerts on it: the filter matches it`,
      );
    expect(downloaded).toBe(false);
  });

  it('writes hostile stored values safely: the file reads back to the event and the built CLI passes it', async () => {
    const res = await fetch(
      `${w.url}/console/api/search/rule?${new URLSearchParams({
        org: ORG_A,
        name: 'acme.hostile',
        filter: 'eventType eq "user.session.start" and outcome.result eq "FAILURE"',
        group_by: 'actor.alternateId,client.userAgent.rawUserAgent',
        alert: hostile.uuid,
      })}`,
      { headers: { authorization: `Bearer ${KEY_A}` } },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="acme.hostile.yaml"');
    const text = await res.text();
    const file = join(mkdtempSync(join(tmpdir(), 'hooklog-hostile-')), 'acme.hostile.yaml');
    writeFileSync(file, text);
    // Read as the cases' loader reads (merge keys on): the event exactly as delivered.
    const [rule] = parseDocument(text, { merge: true }).toJS() as Array<{
      cases: Array<{ events: Array<{ event: unknown }> }>;
    }>;
    expect(rule!.cases[0]!.events[0]!.event).toEqual(hostile);
    const run = await runCli(['rules', 'test', '--cases', file], {}, dirname(file), { built: true });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^1 rules?, 1 cases?: 1 passed, 0 failed/m);
  });

  it("keeps orgs apart: another org, or another org's event, is 404", async () => {
    const get = (q: Record<string, string>) =>
      fetch(`${w.url}/console/api/search/rule?${new URLSearchParams({ name: 'x.y', filter: 'eventType pr', ...q })}`, {
        headers: { authorization: `Bearer ${KEY_A}` },
      });
    expect((await get({ org: ORG_A, alert: early[1]!.uuid })).status).toBe(200);
    expect((await get({ org: ORG_B, alert: otherOrg.uuid })).status).toBe(404);
    expect((await get({ org: ORG_A, alert: otherOrg.uuid })).status).toBe(404);
    expect((await get({ org: ORG_A, alert: `${early[1]!.uuid},${otherOrg.uuid}` })).status).toBe(404);
    const bad = await get({ org: ORG_A, alert: early[1]!.uuid, name: 'no spaces please' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { param: string }).param).toBe('name');
  });
});
