/**
 * Alerts and alert states for bench/console, beside the generated events:
 * `n` alerts over every org (or, with `oneOrg`, all in the attacked org) and
 * the whole range (8 rules, keys of real users),
 * one of them on 20 real events of the busiest user of the attacked org (the
 * alert page reads its events), and triage on about half of them (acknowledged,
 * closed with a resolution, assigned), as analysts would leave it.
 */
import type { Store } from '../../platform/store/index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { actorOf, eventBy, user, type Generated, type GenOptions } from '../analytics/generate.js';
import { insertChunk } from '../analytics/load.js';
import { ATTACKED } from '../analytics/plants.js';

const RULES = [
  ['okta.brute_force', 'Brute force', 'high'],
  ['okta.password_spray', 'Password spraying', 'high'],
  ['okta.mfa_fatigue', 'MFA fatigue', 'high'],
  ['okta.new_country', 'New country for user', 'medium'],
  ['okta.admin_grant', 'Admin role granted', 'medium'],
  ['okta.impossible_travel', 'Impossible travel', 'medium'],
  ['okta.api_token', 'API token created', 'low'],
  ['hooklog.hook.delivery.lost', 'Event hook delivery lost', 'medium'],
] as const;

const t = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

export async function loadAlerts(
  store: Store,
  opts: GenOptions,
  n: number,
  oneOrg = false,
): Promise<{ alerts: number; changes: number; busiestUser: string; someAlert: string }> {
  const db = store.database;
  const users = await store.query<{ org: string; user: string }>(
    `SELECT org, actor_alternate_id AS user FROM ${db}.${EVENTS_TABLE}
     WHERE actor_alternate_id IS NOT NULL ${oneOrg ? 'AND org = {org:String}' : ''}
     GROUP BY org, user ORDER BY org, count() DESC LIMIT 100 BY org`,
    { org: ATTACKED },
  );
  const busiest = users.find((u) => u.org === ATTACKED)!.user;
  const theirs = await store.query<{ uuid: string; published: string }>(
    `SELECT uuid, toString(published) AS published FROM ${db}.${EVENTS_TABLE}
     WHERE org = {org:String} AND actor_alternate_id = {user:String} ORDER BY published DESC LIMIT 20`,
    { org: ATTACKED, user: busiest },
  );
  const span = opts.days * 86_400_000;
  const start = opts.start.getTime();
  const alerts: object[] = [];
  const states: object[] = [];
  let rnd = 12345;
  const r = () => (rnd = (rnd * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  for (let i = 0; i < n; i++) {
    const u = users[Math.floor(r() * users.length)]!;
    const [rule_id, rule_title, severity] = RULES[i % RULES.length]!;
    const at = start + Math.floor(r() * span);
    const id = `bench${String(i).padStart(27, '0')}`;
    alerts.push({
      event_time: t(at),
      first_event_time: t(at - 60_000),
      alert_id: id,
      rule_id,
      rule_title,
      severity,
      kind: 'threshold',
      org: u.org,
      group_key: JSON.stringify([u.user]),
      event_count: 5,
      event_ids: Array.from({ length: 5 }, (_, k) => `00000000-0000-4000-8000-${String(i * 5 + k).padStart(12, '0')}`),
    });
    const x = r();
    const change = (k: number, action: string, status: string, extra: object = {}) =>
      states.push({
        at: t(at + 600_000 * k),
        org: u.org,
        alert_id: id,
        change_id: `${id}-${k}`,
        action,
        status,
        resolution: '',
        assignee: null,
        note: '',
        actor: 'analyst',
        actor_name: 'analyst@example.com',
        actor_kind: 'user',
        request_id: 'bench',
        ...extra,
      });
    if (x < 0.5) change(1, 'acknowledge', 'acknowledged');
    if (x < 0.2)
      change(2, 'close', 'closed', { resolution: x < 0.1 ? 'false_positive' : 'true_positive', note: 'bench' });
    if (x > 0.9) change(3, 'assign', '', { assignee: 'analyst' });
  }
  const someAlert = 'bench-busiest-user-alert';
  alerts.push({
    event_time: theirs[0]!.published,
    first_event_time: theirs.at(-1)!.published,
    alert_id: someAlert,
    rule_id: 'okta.brute_force',
    rule_title: 'Brute force',
    severity: 'high',
    kind: 'threshold',
    org: ATTACKED,
    group_key: JSON.stringify([busiest]),
    event_count: theirs.length,
    event_ids: theirs.map((e) => e.uuid),
  });
  for (let i = 0; i < alerts.length; i += 10_000) await store.insertJson('alerts', alerts.slice(i, i + 10_000));
  for (let i = 0; i < states.length; i += 10_000) await store.insertJson('alert_states', states.slice(i, i + 10_000));
  return { alerts: alerts.length, changes: states.length, busiestUser: busiest, someAlert };
}

/** The hostile kinds of issue 36: what an attacker puts in the fields of a failed sign-in. */
export const HOSTILE = {
  '100 KB login': `long-${'abcאבגهوز0 '.repeat(10_000)}@acme.example.com`.slice(0, 100_000),
  '1 MB login': `huge-${'y'.repeat(1_000_000)}@acme.example.com`,
  'bidi override': 'rtl\u202Emoc.elpmaxe-a@nimda',
  NUL: 'nul\u0000user@acme.example.com',
  '10,000-character user agent': 'agent@acme.example.com',
} as const;
const LONG_AGENT = `Mozilla/5.0 ${'(KHTML, like Gecko) '.repeat(500)}`.slice(0, 10_000);

/**
 * One failed sign-in of each hostile kind in the attacked org, at the end of
 * the range, and an alert on each (as the test rule of the console's tests
 * makes: keyed by the login), so the list, the alert page and the user page
 * carry them. Returns the alert id by kind.
 */
export async function loadHostile(store: Store, opts: GenOptions): Promise<Record<string, string>> {
  const at = opts.start.getTime() + opts.days * 86_400_000 - 3_600_000;
  const ids: Record<string, string> = {};
  const events: Generated[] = [];
  const alerts: object[] = [];
  for (const [i, [kind, login]] of Object.entries(HOSTILE).entries()) {
    const u = user(0, 7);
    const event = eventBy(u, {
      at: at + i * 1000,
      type: 'user.session.start',
      result: 'FAILURE',
      reason: 'INVALID_CREDENTIALS',
      actor: { ...actorOf(u), alternateId: login, displayName: kind === 'bidi override' ? login : u.name },
      ...(kind === '10,000-character user agent' ? { agent: { ...u.agent, raw: LONG_AGENT } } : {}),
      ...(kind === 'bidi override' ? { place: { ...u.place, country: '\u202Eecnarf' } } : {}),
    });
    events.push({ org: ATTACKED, event });
    const id = `bench-hostile-${i}`;
    ids[kind] = id;
    alerts.push({
      event_time: t(at + i * 1000),
      first_event_time: t(at + i * 1000),
      alert_id: id,
      rule_id: 'okta.brute_force',
      rule_title: 'Brute force',
      severity: 'high',
      kind: 'threshold',
      org: ATTACKED,
      group_key: JSON.stringify([login]),
      event_count: 1,
      event_ids: [event.uuid],
    });
  }
  await insertChunk(store, events);
  await store.insertJson('alerts', alerts);
  return ids;
}
