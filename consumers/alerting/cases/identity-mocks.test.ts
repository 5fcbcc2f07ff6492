/**
 * `mocks.identity`: a case gives users the identity context (groups, administrator roles, status) the identity
 * sync would have written, with no sync and no stream; the case's events reach the rule with their actor's
 * context as the live engine gives it (identity/context.ts), any other actor has empty lists, and a failing
 * case's explanation shows what the rule read there.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadCases } from './load.js';
import { runCases } from './run.js';

const dir = mkdtempSync(join(tmpdir(), 'hooklog-idmocks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function folder(name: string, rules: unknown): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'r.yaml'), stringify(rules));
  return d;
}

async function outcomes(d: string) {
  const report = await runCases(loadCases([d]), { allowedLatenessMs: 300_000 });
  return report.results.map((r) => [r.name, r.status, r.message]);
}

const signin = (id: string, extra: Record<string, unknown> = {}) => ({
  eventType: 'user.session.start',
  outcome: { result: 'SUCCESS' },
  actor: { id, alternateId: `${id}@example.com`, type: 'User', ...extra },
});

describe('mocks.identity', () => {
  it("gives the case's actors their groups, roles and status; other actors and orgs have none", async () => {
    const ada = { groups: ['Admins', { id: '00gops', name: 'Ops' }], admin_roles: ['SUPER_ADMIN'] };
    const d = folder('context', [
      {
        id: 'super',
        detection: 'actor.adminRoles eq "SUPER_ADMIN" and actor.status eq "ACTIVE"',
        cases: [
          {
            name: 'ada is a super admin',
            at: '0s',
            alert: true,
            mocks: { identity: { '00uada': ada } },
            event: signin('00uada'),
          },
          {
            name: 'bob has no record',
            at: '0s',
            alert: false,
            mocks: { identity: { '00uada': ada } },
            event: signin('00ubob'),
          },
          {
            name: "ada's record is another org's",
            at: '0s',
            alert: false,
            mocks: { identity: { '00uada': { ...ada, org: 'globex' } } },
            event: signin('00uada'),
          },
          {
            name: "the event's own adminRoles is not the context",
            at: '0s',
            alert: false,
            event: signin('00uada', { adminRoles: ['SUPER_ADMIN'], status: 'ACTIVE' }),
          },
          {
            name: 'a suspended super admin',
            at: '0s',
            alert: false,
            mocks: { identity: { '00uada': { ...ada, status: 'SUSPENDED' } } },
            event: signin('00uada'),
          },
        ],
      },
      {
        id: 'groups',
        detection: {
          names: { 'actor.groups': 'ops' },
          ids: { 'actor.groupIds': '00gops' },
          condition: 'names and ids',
        },
        cases: [
          {
            name: 'ops by name and id',
            at: '0s',
            alert: true,
            mocks: { identity: { '00uada': ada } },
            event: signin('00uada'),
          },
          {
            name: 'a group given by name only has no id',
            at: '0s',
            alert: false,
            mocks: { identity: { '00uada': { groups: ['Ops'] } } },
            event: signin('00uada'),
          },
        ],
      },
    ]);
    expect(await outcomes(d)).toEqual([
      ['ada is a super admin', 'passed', ''],
      ['bob has no record', 'passed', ''],
      ["ada's record is another org's", 'passed', ''],
      ["the event's own adminRoles is not the context", 'passed', ''],
      ['a suspended super admin', 'passed', ''],
      ['ops by name and id', 'passed', ''],
      ['a group given by name only has no id', 'passed', ''],
    ]);
  });

  it('a failing case explains with the context the rule read; a scheduled rule or a bad record is an error', async () => {
    const d = folder('failing', [
      {
        id: 'admin',
        detection: 'eventType eq "user.session.start" and actor.adminRoles eq "SUPER_ADMIN"',
        cases: [
          {
            name: 'expects an alert for an org admin',
            at: '0s',
            alert: true,
            mocks: { identity: { '00ubob': { admin_roles: ['ORG_ADMIN'] } } },
            event: signin('00ubob'),
          },
          {
            name: 'roles not a list',
            at: '0s',
            alert: true,
            mocks: { identity: { '00ubob': { admin_roles: 'SUPER_ADMIN' } } },
            event: signin('00ubob'),
          },
        ],
      },
      {
        id: 'sched',
        type: 'scheduled',
        sql: "SELECT org, org AS o, min(published) AS event_time FROM {db}.events_v4 FINAL WHERE published >= {since:DateTime64(3, 'UTC')} GROUP BY org",
        every_ms: 3_600_000,
        lookback_ms: 3_600_000,
        key: ['o'],
        cases: [
          {
            name: 'identity on a scheduled rule',
            at: '0s',
            alert: true,
            mocks: { identity: { '00ua': {} } },
            event: signin('00ua'),
          },
        ],
      },
    ]);
    const got = await outcomes(d);
    expect(got.slice(0, 2)).toEqual([
      [
        'expects an alert for an org admin',
        'failed',
        `expected an alert, got none: all_of[ eventType eq 'user.session.start' → "user.session.start" ✓, actor.adminRoles eq 'SUPER_ADMIN' → "ORG_ADMIN" ✗ ]`,
      ],
      // The case schema's own message for a mock that is neither form (cases/schema.ts).
      ['roles not a list', 'error', 'invalid case: mocks: Invalid input'],
    ]);
    expect(got[2]).toEqual([
      'identity on a scheduled rule',
      'error',
      'mocks.identity is state of match, threshold, distinct, sequence, unfollowed, absence, stateful, first_seen, temporal rules; sched is a scheduled rule and reads none',
    ]);
  });
});
