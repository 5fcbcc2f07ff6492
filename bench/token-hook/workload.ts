/**
 * The bench's workload: 20 rules of every condition kind (7 match the
 * request, the others are for other clients, networks and users), a
 * 10 000-row CSV lookup table that three rules read, and the fixture request
 * with its login present in the table.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sampleRequest } from '../../receivers/token-hook/testing.js';

export const BENCH_SECRET = 'bench-token-hook-secret-0123456789';
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

/** The token_hooks entry, as a config file would hold it. */
export function benchHook(tableFile: string): Record<string, unknown> {
  return {
    id: 'bench',
    org: 'bench-org',
    auth: { type: 'header', secrets: [BENCH_SECRET] },
    rules: benchRules(),
    lookups: [{ name: 'employees', file: tableFile, format: 'csv', key: 'login', ignore_case: true }],
  };
}

/** The request every bench call sends. */
export function benchRequest(): Buffer {
  return Buffer.from(JSON.stringify(sampleRequest()));
}
