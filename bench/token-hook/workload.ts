/**
 * The bench's workload: 20 rules of every condition kind (7 match the
 * request, the others are for other clients, networks and users), a
 * 10 000-row CSV lookup table that three rules read, and the fixture request
 * with its login present in the table. With `--risk on`, two risk rules
 * before them and 10 000 users' risk states (the request's user at medium).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
// The fixture itself, not receivers/token-hook/testing.ts: that imports vitest, which a bench server must not load
// (the test framework's modules in the heap every major GC marks, and nothing of it in production).
import { tokenHookRequest } from '../../test/fixtures/index.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { riskKey, type RiskState } from '../../schemas/risk.js';

export const BENCH_SECRET = 'bench-token-hook-secret-0123456789';
export const BENCH_ORG = 'bench-org';
export const TABLE_ROWS = 10_000;

/** Writes the lookup table; the request's user is one of its rows. */
export function writeTable(dir: string): string {
  const file = join(dir, 'employees.csv');
  const lines = ['login,department,cost_center,manager'];
  for (let i = 0; i < TABLE_ROWS - 1; i++)
    lines.push(`user${i}@example.com,Dept ${i % 97},CC-${1000 + (i % 313)},mgr${i % 211}@example.com`);
  lines.push('ada.lovelace@acme.example,"Platform, Identity",CC-4242,cto@acme.example');
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

const lookup = (claim: string, column: string, token: 'id' | 'access' | 'both') => ({
  add: { tokens: token, claim, lookup: { table: 'employees', key: '{{user.login}}', column } },
});

/** Users with a risk level in `--risk on` runs; the request's user is one of them, at medium. */
export const RISK_USERS = 10_000;

/**
 * `--risk on`: two rules on the user's risk before the 20 (deny at high; at medium, a claim saying so), over a
 * `<prefix>.risk` holding RISK_USERS users at every level, so each answer looks the user up in the in-memory view.
 */
export function riskRules(): unknown[] {
  return [
    { name: 'deny-high-risk', when: { risk: { user: ['high'] } }, actions: [{ deny: { error_summary: 'At risk.' } }] },
    {
      name: 'medium-risk-claim',
      when: { risk: { user: ['medium'] } },
      actions: [{ add: { tokens: 'id', claim: 'risk', value: 'medium' } }],
    },
  ];
}

/** The user a token hook request is about. */
export function requestUser(body: Buffer): string {
  return (JSON.parse(body.toString()) as { data: { context: { user: { id: string } } } }).data.context.user.id;
}

/**
 * The risk states of `riskRules`: RISK_USERS users of `org`, `user` (the request's, `requestUser`) at medium for a
 * day.
 */
export function riskRecords(org: string, user: string): StreamRecord[] {
  const levels = ['low', 'medium', 'high'] as const;
  const until = new Date(Date.now() + 86_400_000).toISOString();
  return Array.from({ length: RISK_USERS }, (_, i) => {
    const id = i === 0 ? user : `00ubench${i}`;
    const level = i === 0 ? 'medium' : levels[i % 3]!;
    const state: RiskState = {
      org,
      entity: { type: 'user', id },
      level,
      contributions: [{ rule_id: 'bench', alert_id: `a${i}`, level, reason: 'bench', expires_at: until }],
      updated_at: new Date().toISOString(),
      change_id: `c${i}`,
    };
    return { key: riskKey(org, state.entity), value: Buffer.from(JSON.stringify(state)), headers: {} };
  });
}

/** The 20 rules, in evaluation order. */
export function benchRules(): unknown[] {
  const others = Array.from({ length: 10 }, (_, i) => ({
    name: `app-${i}-claims`,
    when: { client_id: [`app-${i}`, `app-${i}-mobile`], scopes_any: ['openid'] },
    actions: [
      { add: { tokens: 'access', claim: `app_${i}`, template: '{{user.id}}:{{client.id}}' } },
      { lifetime: { tokens: 'access', seconds: 3600 } },
    ],
  }));
  return [
    {
      name: 'deny-blocked-clients',
      when: { client_id: ['blocked-1', 'blocked-2'] },
      actions: [{ deny: { error_summary: 'This application is blocked.' } }],
    },
    {
      name: 'deny-outside-network',
      when: { not: { ip_cidrs: ['127.0.0.0/8', '10.0.0.0/8', '2001:db8::/32'] } },
      actions: [{ deny: { error_summary: 'Sign in from the corporate network.' } }],
    },
    { name: 'department', when: { scopes_any: ['profile'] }, actions: [lookup('department', 'department', 'both')] },
    {
      name: 'cost-center',
      when: { client_id: { prefix: 'custom' } },
      actions: [lookup('cost_center', 'cost_center', 'access')],
    },
    {
      name: 'manager',
      when: { user_login: { suffix: '@acme.example', ignore_case: true } },
      actions: [lookup('https://acme.example/claims/manager', 'manager', 'id')],
    },
    {
      name: 'password-only-short-lived',
      when: { mfa_active: false, amr_any: ['PASSWORD'] },
      actions: [{ lifetime: { tokens: 'access', seconds: 900 } }],
    },
    {
      name: 'email-scope',
      when: { scopes_all: ['openid', 'email'] },
      actions: [
        { add: { tokens: 'id', claim: 'contact', template: '{{user.profile.firstName}} {{user.profile.lastName}}' } },
      ],
    },
    ...others,
    {
      name: 'admins',
      when: { user_login: { regex: '^admin' } },
      actions: [{ add: { tokens: 'access', claim: 'is_admin', value: true } }],
    },
    {
      name: 'emea-locale',
      when: { user_profile: { locale: ['fr', 'de', 'it'] } },
      actions: [{ add: { tokens: 'id', claim: 'region', value: 'emea' } }],
    },
    {
      name: 'hardware-keys',
      when: { amr_any: ['HWK', 'SC'] },
      actions: [{ remove: { tokens: 'access', claim: 'is_admin' } }],
    },
  ];
}

/** The token_hooks entry, as a config file would hold it (with the risk rules first when `risk`). */
export function benchHook(tableFile: string, risk = false): Record<string, unknown> {
  return {
    id: 'bench',
    org: BENCH_ORG,
    auth: { type: 'header', secrets: [BENCH_SECRET] },
    rules: [...(risk ? riskRules() : []), ...benchRules()],
    lookups: [{ name: 'employees', file: tableFile, format: 'csv', key: 'login', ignore_case: true }],
  };
}

/** The request every bench call sends. */
export function benchRequest(): Buffer {
  return Buffer.from(JSON.stringify(tokenHookRequest()));
}
