/**
 * Identity context in rules, on both stream kinds (embedded log, the shared Kafka broker): the alerting engine
 * gives each event its actor's groups, administrator roles and status from records on a real
 * `<prefix>.identity` topic (schemas/identity.ts), current before the first event is evaluated; a tombstone
 * removes a user; a user without a record has empty lists; group names an attacker chose stay data; an event
 * carrying those fields itself cannot claim a role.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../platform/log.js';
import { Header, topicNames } from '../../../platform/stream/headers.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../../platform/stream/embedded/index.js';
import { openKafkaStream } from '../../../platform/stream/kafka/index.js';
import type { Stream, StreamRecord } from '../../../platform/stream/types.js';
import { identityKey, identityTopic, type IdentityUser } from '../../../schemas/identity.js';
import { kafkaBrokers } from '../../../test/kafka/inject.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import type { Alert } from '../alert.js';
import { alertingSchema } from '../config.js';
import { startAlerting } from '../index.js';
import { IdentityView } from './view.js';
import { registry } from '../../../platform/metrics.js';
import { total } from '../../../test/support/metrics.js';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { CONTENT_DIR } from '../index.js';

const log = silentLogger();

/** A group name someone who may name groups chose: quotes, filter syntax, markup, a control character. */
const HOSTILE = '"] or actor.id pr or [" <img src=x onerror=alert(1)>\u0007';

function user(org: string, id: string, u: Partial<IdentityUser>): StreamRecord {
  const value: IdentityUser = {
    org,
    user_id: id,
    status: 'ACTIVE',
    groups: [],
    admin_roles: [],
    truncated: false,
    last_updated: '2026-11-01T00:00:00.000Z',
    synced_at: '2026-11-01T00:00:00.000Z',
    ...u,
  };
  return { key: identityKey(org, id), value: Buffer.from(JSON.stringify(value)), headers: {} };
}

const tombstone = (org: string, id: string): StreamRecord => ({
  key: identityKey(org, id),
  value: Buffer.alloc(0),
  headers: {},
});

/** A sign-in of `actor` (the event's own actor fields beside the id in `extra`), `agoMs` before now. */
function signin(
  org: string,
  uuid: string,
  actorId: string,
  extra: Record<string, unknown> = {},
  more: { agoMs?: number; country?: string } = {},
): StreamRecord {
  const event = {
    uuid,
    published: new Date(Date.now() - (more.agoMs ?? 0)).toISOString(),
    ...(more.country ? { client: { geographicalContext: { country: more.country } } } : {}),
    eventType: 'user.session.start',
    outcome: { result: 'SUCCESS' },
    actor: { id: actorId, type: 'User', alternateId: `${actorId}@${org}.example`, ...extra },
  };
  return { key: org, value: Buffer.from(JSON.stringify(event)), headers: { [Header.org]: org } };
}

/** Rules reading each context path, in both languages (filter text, Sigma-style selections). */
const RULES = [
  { id: 'super_admin', detection: 'actor.adminRoles eq "SUPER_ADMIN"' },
  { id: 'any_admin', detection: 'eventType eq "user.session.start" and actor.adminRoles pr' },
  { id: 'not_admin', detection: 'eventType eq "user.session.start" and not (actor.adminRoles pr)' },
  { id: 'admins_group', detection: { s: { 'actor.groups': 'Admins' }, condition: 's' } },
  { id: 'group_id', detection: 'actor.groupIds in ["00gadmins"]' },
  { id: 'hostile_group', detection: { s: { 'actor.groups': HOSTILE }, condition: 's' } },
  { id: 'suspended', detection: 'actor.status eq "SUSPENDED"' },
  // The shipped rule, as shipped (its cases are content.test.ts's).
  (() => {
    const file = parse(readFileSync(join(CONTENT_DIR, 'account-takeover.yaml'), 'utf8')) as Record<string, unknown>[];
    const { cases: _cases, ...rule } = file.find((r) => r['id'] === 'takeover.admin_signin_new_country')!;
    return rule;
  })(),
];

/** Every alert appended to `topic`, by a reader group of its own; `toEnd` reads up to what is there now. */
async function readAlerts(stream: Stream, topic: string) {
  const all: Alert[] = [];
  const group = randomName('alerts-reader');
  const reader = await stream.consume({
    topic,
    group,
    maxBatchWaitMs: 20,
    handler: async (b) => void all.push(...b.records.map((r) => JSON.parse(r.value.toString()) as Alert)),
  });
  const drained = async (t: string, g: string, what: string) => {
    const end = await stream.latestOffsets(t);
    await waitFor(
      async () => {
        const c = await stream.committedOffsets(t, g);
        return [...end].map(([p, next]) => ({ partition: p, next, committed: c.get(p) ?? 0 }));
      },
      { until: (parts) => parts.every((x) => x.committed >= x.next), timeoutMs: 60_000, what },
    );
  };
  return { all, drained, toEnd: () => drained(topic, group, `reading ${topic} to its end`), stop: () => reader.stop() };
}

/** (rule, event) pairs of the alerts, sorted. */
const fired = (alerts: readonly Alert[]) => alerts.map((a) => `${a.rule_id} ${a.event_ids.join(',')}`).sort();

function identitySuite(open: () => Stream, timeoutMs: number): void {
  it(
    'rules read the actor context from the identity records, current before the first event; unknown users have none',
    async () => {
      const stream = open();
      const prefix = randomName('idctx');
      const t = topicNames(prefix);
      const idTopic = identityTopic(prefix);
      await stream.ensureTopics([
        { name: t.logs, partitions: 3 },
        { name: t.deadletter, partitions: 1 },
        { name: idTopic, partitions: 3, compacted: true },
        { name: `${prefix}.alerts`, partitions: 3 },
      ]);
      // The records and the events are on the topics before alerting starts: the engine takes the events at
      // once, so it must not evaluate one before the view has every record (else ada would hold no role).
      await stream.append(idTopic, [
        user('acme', '00uada', {
          groups: [
            { id: '00gadmins', name: 'Admins' },
            { id: '00gevil', name: HOSTILE },
          ],
          admin_roles: ['ORG_ADMIN', 'SUPER_ADMIN'],
        }),
        user('acme', '00ubob', { groups: [{ id: '00geveryone', name: 'Everyone' }] }),
        user('acme', '00ueve', { status: 'SUSPENDED', admin_roles: ['READ_ONLY_ADMIN'] }),
        // Same user id in another org: no role there.
        user('globex', '00uada', { groups: [{ id: '00geveryone', name: 'Everyone' }] }),
        // Replaced by a later record (offset order): the later one holds.
        user('acme', '00ufay', { admin_roles: ['SUPER_ADMIN'] }),
        user('acme', '00ufay', { admin_roles: [] }),
      ]);
      const H = 3_600_000;
      await stream.append(t.logs, [
        // The shipped rule: ada (an administrator) and dan (no record) each sign in from the US, then from
        // Romania; the later events move the watermark past them. Only ada's Romania is a finding.
        signin('acme', 'e-ada-us', '00uada', {}, { agoMs: 2 * H, country: 'United States' }),
        signin('acme', 'e-dan-us', '00udan', {}, { agoMs: 2 * H, country: 'United States' }),
        signin('acme', 'e-ada-ro', '00uada', {}, { agoMs: H, country: 'Romania' }),
        signin('acme', 'e-dan-ro', '00udan', {}, { agoMs: H, country: 'Romania' }),
        signin('acme', 'e-ada', '00uada'),
        signin('acme', 'e-bob', '00ubob'),
        signin('acme', 'e-eve', '00ueve'),
        signin('globex', 'e-ada-globex', '00uada'),
        signin('acme', 'e-fay', '00ufay'),
        // No record; and the event's own claim to roles, groups and status (any spelling) is not the context.
        signin('acme', 'e-dan', '00udan', {
          adminRoles: ['SUPER_ADMIN'],
          admin_roles: ['SUPER_ADMIN'],
          Groups: ['Admins'],
          status: 'SUSPENDED',
        }),
      ]);
      const group = randomName('alerting');
      const config = alertingSchema.parse({
        group,
        rules: RULES,
        clickhouse: false,
        allowed_lateness_ms: 0,
        max_batch_wait_ms: 20,
      });
      const alerts = await readAlerts(stream, `${prefix}.alerts`);
      const alerting = await startAlerting({
        config,
        stream,
        topicPrefix: prefix,
        partitions: 3,
        logsTopic: t.logs,
        deadletterTopic: t.deadletter,
        logger: log,
      });
      try {
        // Every alert is appended before the engine commits its batch: once the logs are committed, all are in.
        await alerts.drained(t.logs, group, 'the engine to commit the logs');
        await alerts.toEnd();
        expect(fired(alerts.all)).toEqual(
          [
            'takeover.admin_signin_new_country e-ada-ro',
            'super_admin e-ada',
            'super_admin e-ada-us',
            'super_admin e-ada-ro',
            'any_admin e-ada',
            'any_admin e-ada-us',
            'any_admin e-ada-ro',
            'admins_group e-ada-us',
            'admins_group e-ada-ro',
            'group_id e-ada-us',
            'group_id e-ada-ro',
            'hostile_group e-ada-us',
            'hostile_group e-ada-ro',
            'not_admin e-dan-us',
            'not_admin e-dan-ro',
            'admins_group e-ada',
            'group_id e-ada',
            'hostile_group e-ada',
            'not_admin e-bob',
            'any_admin e-eve',
            'suspended e-eve',
            'not_admin e-ada-globex',
            'not_admin e-fay',
            'not_admin e-dan',
          ].sort(),
        );

        // A record appended while running reaches the rules: bob is made an administrator. Each probe is a new
        // sign-in (its own uuid); the view takes the record within the reader's fetch wait.
        await stream.append(idTopic, [user('acme', '00ubob', { admin_roles: ['SUPER_ADMIN'] })]);
        let probe = 0;
        await waitFor(
          async () => {
            await stream.append(t.logs, [signin('acme', `e-bob-${++probe}`, '00ubob')]);
            await alerts.drained(t.logs, group, 'the engine to commit the probe');
            await alerts.toEnd();
            return fired(alerts.all).filter((a) => a.startsWith('super_admin e-bob'));
          },
          { until: (got) => got.length > 0, timeoutMs, intervalMs: 200, what: "bob's sign-in as a super admin" },
        );
      } finally {
        await alerting.stop();
        await alerts.stop();
      }
    },
    timeoutMs * 3,
  );

  it(
    'the view is current when start resolves, takes records in offset order, and a tombstone removes a user',
    async () => {
      const stream = open();
      const topic = identityTopic(randomName('idview'));
      await stream.ensureTopics([{ name: topic, partitions: 3, compacted: true }]);
      const many = Array.from({ length: 200 }, (_, i) => user('acme', `00u${i}`, { admin_roles: ['ORG_ADMIN'] }));
      await stream.append(topic, [
        ...many,
        user('acme', '00ucid', { groups: [{ id: '00g1', name: 'Admins' }], admin_roles: ['SUPER_ADMIN'] }),
        // Not the contract (unknown field), and a record keyed as another user: neither changes anything.
        { key: identityKey('acme', '00ubad'), value: Buffer.from('{"org":"acme","user_id":"00ubad"}'), headers: {} },
        { ...user('acme', '00umallory', { admin_roles: ['SUPER_ADMIN'] }), key: identityKey('acme', '00uvictim') },
      ]);
      const ignored = async (reason: string) =>
        total(await registry.metrics(), 'hooklog_alerting_identity_records_ignored_total', { reason });
      const [unreadable, misskeyed] = [await ignored('unreadable'), await ignored('misskeyed')];
      const view = new IdentityView(log);
      await view.start(stream, topic);
      try {
        // No wait: everything appended before start is in when it resolves.
        expect(view.size).toBe(201);
        expect(view.actor('acme', '00u199')?.adminRoles).toEqual(['ORG_ADMIN']);
        expect(view.actor('acme', '00ucid')).toEqual({
          groups: ['Admins'],
          groupIds: ['00g1'],
          adminRoles: ['SUPER_ADMIN'],
          status: 'ACTIVE',
        });
        expect(view.actor('acme', '00ubad')).toBeUndefined();
        expect(view.actor('acme', '00uvictim')).toBeUndefined();
        expect(view.actor('globex', '00ucid')).toBeUndefined();
        expect(view.ignored).toBe(2);
        expect([(await ignored('unreadable')) - unreadable, (await ignored('misskeyed')) - misskeyed]).toEqual([1, 1]);

        await stream.append(topic, [tombstone('acme', '00ucid')]);
        await waitFor(() => view.actor('acme', '00ucid'), {
          until: (ctx) => ctx === undefined,
          timeoutMs,
          what: "cid's tombstone to remove cid",
        });
        expect(view.size).toBe(200);
        // A user recreated after the tombstone is back.
        await stream.append(topic, [user('acme', '00ucid', { status: 'STAGED' })]);
        await waitFor(() => view.actor('acme', '00ucid')?.status, {
          until: (s) => s === 'STAGED',
          timeoutMs,
          what: 'cid recreated',
        });
      } finally {
        view.stop();
      }
    },
    timeoutMs * 3,
  );
}

describe('identity context (embedded)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-idctx-'));
  let stream: EmbeddedStream;
  beforeAll(async () => {
    stream = await openEmbeddedStream({ dataDir: dir, logger: log });
  });
  afterAll(async () => {
    await stream?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  identitySuite(() => stream, 20_000);
});

describe('identity context (Kafka)', () => {
  let stream: Stream;
  beforeAll(async () => {
    stream = await openKafkaStream({ brokers: kafkaBrokers().split(','), clientId: randomName('idctx'), logger: log });
  });
  afterAll(async () => {
    await stream?.close();
  });
  identitySuite(() => stream, 60_000);
});
