/**
 * The alert list at incident scale, over the real routes (hooklog started as
 * `hooklog start` starts it, embedded stream and chdb, signed in through the
 * simulated org): keyset pages of a snapshot whose total holds while alerts
 * arrive, the four sorts both ways, the filters (assignee with "mine", text
 * over rule, title and key), and "select all N matching": one change by filter
 * of 10,000 alerts, recorded per alert through the stream like single changes.
 * Org B's alerts never show in org A's pages, totals or changes. The alerts
 * are rows as alerting's ClickHouse output writes them (thousands of them:
 * the rule path has tests of its own).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../test/support/wait.js';
import { encodePage } from './alert-list.js';
import {
  alertRows,
  chTime,
  insertAlerts,
  ORG_A,
  ORG_B,
  postChange,
  signIn,
  startConsoleWorld,
  USERS,
  type ConsoleWorld,
  type Signed,
} from './testing.js';

let w: ConsoleWorld;
let alice: Signed;
let bob: Signed;
let vera: Signed;
/** The snapshot of the flood's first page, taken before 7 more alerts arrived. */
let floodAsOf: string;

const BULK_RULE = 'list.test.bulk';
const BULK_N = 10_000;
const SORT_RULE = 'list.test.sorts';
const SEVERITIES = ['critical', 'high', 'medium', 'low', 'informational'] as const;
const SEVERITY_RANK: Record<string, number> = { critical: 5, high: 4, medium: 3, low: 2, informational: 1 };

interface Row {
  alert_id: string;
  org: string;
  rule_id: string;
  rule_title: string;
  severity: string;
  status: string;
  event_time: string;
  event_count: string;
  group_key: string;
  assignee: string | null;
}
interface ListAnswer {
  alerts: Row[];
  total: number;
  counts: Record<string, number>;
  newer: number;
  as_of: string;
  offset: number;
  page: { first: string; next: string | null; prev: string | null };
}

const get = async (path: string, who: Signed): Promise<Response> =>
  fetch(`${w.url}${path}`, { headers: { cookie: who.cookie } });
async function list(who: Signed, params: Record<string, string>): Promise<ListAnswer> {
  const res = await get(`/console/api/alerts?${new URLSearchParams(params)}`, who);
  if (res.status !== 200) throw new Error(`list answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as ListAnswer;
}
/** Every page of a list, following `next`: the rows in order. */
async function walk(who: Signed, params: Record<string, string>): Promise<{ rows: Row[]; pages: ListAnswer[] }> {
  const pages: ListAnswer[] = [];
  let page = await list(who, params);
  pages.push(page);
  while (page.page.next) {
    page = await list(who, { ...params, page: page.page.next });
    pages.push(page);
  }
  return { rows: pages.flatMap((p) => p.alerts), pages };
}

beforeAll(async () => {
  w = await startConsoleWorld();
  const sortRows = alertRows(ORG_A, SORT_RULE, 'Sortable', 37, (i) => ({
    severity: SEVERITIES[i % 5],
    // Ties in every sort, so the alert id must break them.
    event_count: 1 + (i % 4),
  }));
  await insertAlerts(w, [
    ...alertRows(ORG_A, BULK_RULE, 'Bulk flood', BULK_N),
    ...alertRows(ORG_B, BULK_RULE, 'Bulk flood', 300),
    ...sortRows,
    ...alertRows(ORG_A, 'list.test.text', 'Needle in title', 3),
    ...alertRows(ORG_A, 'list.test.key', 'Keyed', 2, (i) => ({ group_key: JSON.stringify([`hay-NEEDLE-${i}`]) })),
    ...alertRows(ORG_B, 'list.test.text', 'Needle in title', 4),
  ]);
  [alice, bob, vera] = await Promise.all([signIn(w, USERS.alice), signIn(w, USERS.bob), signIn(w, USERS.vera)]);
}, 180_000);

afterAll(async () => {
  await w?.stop();
});

describe('pages of a snapshot', () => {
  it('pages through every alert once, with a total that holds while alerts arrive', async () => {
    const first = await list(alice, { rule: BULK_RULE, limit: '500' });
    expect(first.total).toBe(BULK_N);
    expect(first.alerts).toHaveLength(500);
    expect(first.newer).toBe(0);
    expect(first.page.prev).toBeNull();
    floodAsOf = first.as_of;
    // Alerts arrive after the first page: newest of all, they would push every page down by 7.
    await insertAlerts(
      w,
      alertRows(ORG_A, BULK_RULE, 'Bulk flood', 7, () => ({ event_time: chTime(Date.now()) })),
    );
    const seen: Row[] = [...first.alerts];
    let page = first;
    while (page.page.next) {
      page = await list(alice, { rule: BULK_RULE, limit: '500', page: page.page.next });
      expect(page.total).toBe(BULK_N);
      expect(page.newer).toBe(7);
      expect(page.offset).toBe(seen.length);
      seen.push(...page.alerts);
    }
    expect(seen).toHaveLength(BULK_N);
    expect(new Set(seen.map((r) => r.alert_id)).size).toBe(BULK_N);
    expect(seen.every((r) => r.org === ORG_A)).toBe(true);
    // Newest first.
    for (let i = 1; i < seen.length; i++) expect(seen[i - 1]!.event_time >= seen[i]!.event_time).toBe(true);
    // A new snapshot (the first page without a token) counts them.
    expect((await list(alice, { rule: BULK_RULE, limit: '1' })).total).toBe(BULK_N + 7);
  });

  it('goes back page by page to the first, the same rows as going forward', async () => {
    const { pages } = await walk(alice, { rule: SORT_RULE, limit: '10', sort: 'count', dir: 'asc' });
    expect(pages.map((p) => p.alerts.length)).toEqual([10, 10, 10, 7]);
    let back = pages.at(-1)!;
    for (let i = pages.length - 2; i >= 0; i--) {
      back = await list(alice, { rule: SORT_RULE, limit: '10', sort: 'count', dir: 'asc', page: back.page.prev! });
      expect(back.alerts.map((r) => r.alert_id)).toEqual(pages[i]!.alerts.map((r) => r.alert_id));
      expect(back.offset).toBe(i * 10);
    }
    expect(back.page.prev).toBeNull();
  });

  it('refuses a token it did not make, or one of another sort', async () => {
    const first = await list(alice, { rule: SORT_RULE, limit: '10' });
    for (const page of ['garbage', Buffer.from('{"v":2}').toString('base64url'), 'x'.repeat(700)]) {
      const res = await get(`/console/api/alerts?${new URLSearchParams({ page })}`, alice);
      expect(res.status, page).toBe(400);
    }
    const other = await get(
      `/console/api/alerts?${new URLSearchParams({ sort: 'severity', page: first.page.next! })}`,
      alice,
    );
    expect(other.status).toBe(400);
    expect(((await other.json()) as { error: string }).error).toContain('another sort');
    // A snapshot a little ahead of this clock (another instance of a fleet made it) is taken; a day ahead is not.
    const at = (ms: number) => encodePage({ v: 1, a: Date.now() + ms, s: 'time', d: true, o: 0 });
    expect((await get(`/console/api/alerts?${new URLSearchParams({ page: at(5000) })}`, alice)).status).toBe(200);
    expect((await get(`/console/api/alerts?${new URLSearchParams({ page: at(86_400_000) })}`, alice)).status).toBe(400);
  });
});

describe('sorts', () => {
  const statusRank = (s: string) => ['open', 'acknowledged', 'closed'].indexOf(s);
  const value: Record<string, (r: Row) => number> = {
    time: (r) => Date.parse(`${r.event_time.replace(' ', 'T')}Z`),
    severity: (r) => SEVERITY_RANK[r.severity]!,
    count: (r) => Number(r.event_count),
    status: (r) => statusRank(r.status),
  };

  it('sorts by time, severity, count and status, both ways, ties broken by id, across pages', async () => {
    const { rows: all } = await walk(alice, { rule: SORT_RULE, limit: '500' });
    expect(all).toHaveLength(37);
    // Some states, so the status sort has something to order.
    const ids = all.map((r) => r.alert_id);
    expect((await postChange(w, alice, { alert_ids: ids.slice(0, 9), action: 'acknowledge' })).status).toBe(200);
    // Closing takes open and acknowledged alerts alike: 5 stay acknowledged, 8 are closed.
    const close = { alert_ids: ids.slice(5, 13), action: 'close', resolution: 'benign' };
    expect((await postChange(w, alice, close)).status).toBe(200);
    for (const sort of Object.keys(value))
      for (const dir of ['desc', 'asc']) {
        const { rows } = await walk(alice, { rule: SORT_RULE, limit: '6', sort, dir });
        const sign = dir === 'desc' ? -1 : 1;
        const expected = [...rows].sort(
          (a, b) =>
            sign * (value[sort]!(a) - value[sort]!(b)) ||
            sign * (a.alert_id < b.alert_id ? -1 : a.alert_id > b.alert_id ? 1 : 0),
        );
        expect(
          rows.map((r) => r.alert_id),
          `${sort} ${dir}`,
        ).toEqual(expected.map((r) => r.alert_id));
        expect(new Set(rows.map((r) => r.alert_id)).size, `${sort} ${dir}`).toBe(37);
      }
    const byStatus = await list(alice, { rule: SORT_RULE, sort: 'status', dir: 'desc', limit: '4' });
    expect(byStatus.alerts.map((r) => r.status)).toEqual(['closed', 'closed', 'closed', 'closed']);
    expect(byStatus.counts).toEqual({ open: 24, acknowledged: 5, closed: 8 });
  });
});

describe('filters', () => {
  it("finds text in the rule's id, its title and the key, case-insensitively, in the principal's orgs only", async () => {
    const found = await list(alice, { q: 'needle' });
    expect(found.alerts.map((r) => r.rule_id).sort()).toEqual([
      'list.test.key',
      'list.test.key',
      'list.test.text',
      'list.test.text',
      'list.test.text',
    ]);
    expect(found.total).toBe(5);
    expect((await list(bob, { q: 'needle' })).total).toBe(4);
    expect((await list(alice, { q: 'list.test.k' })).total).toBe(2);
    expect((await get(`/console/api/alerts?q=${'x'.repeat(201)}`, alice)).status).toBe(400);
  });

  it('filters by assignee: "mine" is the signed-in analyst, "" the unassigned', async () => {
    const some = (await list(alice, { q: 'needle', limit: '2' })).alerts.map((r) => r.alert_id);
    const assign = await postChange(w, alice, { alert_ids: some, action: 'assign', assignee: USERS.alice.login });
    expect(assign.status).toBe(200);
    const mine = await list(alice, { assignee: 'mine' });
    expect(mine.alerts.map((r) => r.alert_id).sort()).toEqual([...some].sort());
    // The viewer's "mine" is the viewer's: none.
    expect((await list(vera, { assignee: 'mine' })).total).toBe(0);
    expect((await list(vera, { assignee: USERS.alice.login })).total).toBe(2);
    expect((await list(alice, { q: 'needle', assignee: '' })).total).toBe(3);
  });
});

describe('select all N matching', () => {
  it('changes 10,000 alerts by filter in one request, recorded per alert, and not one of org B', async () => {
    const store = w.hooklog.store!;
    const filterOf = async (who: Signed, params: Record<string, string>) => {
      const head = await list(who, { ...params, limit: '1' });
      return { filter: { ...params, as_of: head.as_of }, total: head.total, counts: head.counts };
    };
    // The snapshot the first test paged through, before 7 more arrived: exactly the 10,000, all open.
    const snap = { rule: BULK_RULE, status: 'open', as_of: floodAsOf };
    expect((await list(alice, { rule: BULK_RULE, limit: '1' })).total).toBe(BULK_N + 7);
    const ids7 = (await list(alice, { rule: BULK_RULE, limit: '7' })).alerts.map((r) => r.alert_id);

    // The count the analyst confirmed must be the count the server finds.
    const wrong = await postChange(w, alice, { filter: snap, expected: BULK_N + 7, action: 'acknowledge' });
    expect(wrong.status).toBe(409);
    expect(await wrong.json()).toMatchObject({ matched: BULK_N });
    // A viewer may not; nor may org A's analyst name org B.
    expect((await postChange(w, vera, { filter: snap, expected: BULK_N, action: 'acknowledge' })).status).toBe(403);
    const theirs = await postChange(w, alice, {
      filter: { ...snap, org: ORG_B },
      expected: 300,
      action: 'acknowledge',
    });
    expect(theirs.status).toBe(404);

    const started = Date.now();
    const res = await postChange(w, alice, { filter: snap, expected: BULK_N, action: 'acknowledge', note: 'flood' });
    expect([200, 202]).toContain(res.status);
    const answer = (await res.json()) as { changed: number; change_ids: string[] };
    expect(answer.changed).toBe(BULK_N);
    expect(new Set(answer.change_ids).size).toBe(BULK_N);
    // Every alert has its own record: the audit trail, as for a change made alert by alert.
    const audit = await waitFor(
      () =>
        store.query<{ n: string; alerts: string; changes: string; orgs: string[]; actors: string[] }>(
          `SELECT count() AS n, uniqExact(alert_id) AS alerts, uniqExact(change_id) AS changes,
             groupUniqArray(org) AS orgs, groupUniqArray(actor_name) AS actors
           FROM ${store.database}.alert_states FINAL WHERE action = 'acknowledge' AND note = 'flood'`,
        ),
      { until: (r) => Number(r[0]?.n) >= BULK_N, what: 'the bulk change in alert_states', timeoutMs: 60_000 },
    );
    expect(audit[0]).toMatchObject({
      n: String(BULK_N),
      alerts: String(BULK_N),
      changes: String(BULK_N),
      orgs: [ORG_A],
      actors: [USERS.alice.login],
    });
    expect(Date.now() - started).toBeLessThan(60_000);
    // Each alert's state changed: all 10,000 of the snapshot acknowledged, the 7 newer ones still open.
    const after = await list(alice, { rule: BULK_RULE, limit: '7' });
    expect(after.counts).toEqual({ open: 7, acknowledged: BULK_N, closed: 0 });
    expect(after.alerts.map((r) => r.alert_id)).toEqual(ids7);
    expect(after.alerts.every((r) => r.status === 'open')).toBe(true);
    expect((await list(bob, { rule: BULK_RULE, limit: '1' })).counts).toEqual({
      open: 300,
      acknowledged: 0,
      closed: 0,
    });

    // Acknowledging them again is refused with the server's reason and how many alerts it refused.
    const { filter: again } = await filterOf(alice, { rule: BULK_RULE });
    const refused = await postChange(w, alice, { filter: again, expected: BULK_N + 7, action: 'acknowledge' });
    expect(refused.status).toBe(409);
    const body = (await refused.json()) as { refused: unknown[]; refused_count: number; reasons: unknown[] };
    expect(body.refused_count).toBe(BULK_N);
    expect(body.refused).toHaveLength(100);
    expect(body.reasons).toEqual([{ why: 'only an open alert can be acknowledged (it is acknowledged)', n: BULK_N }]);
  }, 180_000);
});
