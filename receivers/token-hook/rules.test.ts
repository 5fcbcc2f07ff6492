/**
 * Rule conditions, each on its own and combined, compiled from parsed config
 * as production compiles them, evaluated on the fixture request (test/fixtures/token-hook) reshaped.
 */
import { describe, expect, it } from 'vitest';
import type { TableResolver } from './actions.js';
import { compileCidrs, ipv4Number, ipv4Ranges } from './conditions.js';
import { parseTokenRequest, type TokenContext } from './request.js';
import { compileRules, evaluate } from './rules.js';
import { configWith, hookEntry, sampleRequest, type LooseJson } from './testing.js';

const noTables: TableResolver = () => undefined;

/** Names of the rules (one per condition set) that match the request. */
function matching(conditions: Record<string, unknown>, req: LooseJson): boolean {
  const config = configWith([
    hookEntry([{ name: 'r', when: conditions, actions: [{ add: { tokens: 'id', claim: 'hit', value: 1 } }] }]),
  ]);
  const { rules, issues } = compileRules(config.token_hooks[0]!.rules, noTables);
  expect(issues).toEqual([]);
  return evaluate(rules, ctxOf(req)).matched.includes('r');
}

function ctxOf(req: LooseJson): TokenContext {
  const parsed = parseTokenRequest(req);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.ctx;
}

function variant(edit: (r: LooseJson) => void): LooseJson {
  const r = sampleRequest();
  edit(r);
  return r;
}

describe('a regex on an attacker-chosen login', () => {
  // `^(a+)+$` against 40 a's and a '!' is 2^40 steps for a backtracking engine: before linearRegex this test
  // held the worker past its timeout. The answer must be the same as a bounded-time engine's: no match.
  it('is matched in bounded time, with the backtracking answer', () => {
    const hostile = `${'a'.repeat(40)}!`;
    const withLogin = (login: string) =>
      variant((r) => {
        ((r.data as LooseJson).context as { user: { profile: { login: string } } }).user.profile.login = login;
      });
    expect(matching({ user_login: { regex: '^(a+)+$' } }, withLogin(hostile))).toBe(false);
    expect(matching({ user_login: { regex: '^(a+)+$' } }, withLogin('a'.repeat(40)))).toBe(true);
    expect(matching({ user_login: { regex: '^(a|aa)+b' } }, withLogin(`${'a'.repeat(5_000)}c`))).toBe(false);
  });
});

describe('conditions', () => {
  const base = sampleRequest();
  const cases: Array<[string, Record<string, unknown>, LooseJson, boolean]> = [
    ['client id listed', { client_id: ['customerPortalWeb'] }, base, true],
    ['client id not listed', { client_id: ['other'] }, base, false],
    ['client id regex', { client_id: { regex: '^custom' } }, base, true],
    [
      'client id from protocol.request when client is absent',
      { client_id: ['customerPortalWeb'] },
      variant((r) => delete r.data.context.protocol.client),
      true,
    ],
    ['a requested scope', { scopes_any: ['email', 'groups'] }, base, true],
    ['no requested scope', { scopes_any: ['groups'] }, base, false],
    ['all requested scopes', { scopes_all: ['openid', 'email'] }, base, true],
    ['not all requested scopes', { scopes_all: ['openid', 'groups'] }, base, false],
    [
      'granted scopes when none requested',
      { scopes_all: ['openid', 'profile'] },
      variant((r) => delete r.data.context.protocol.request.scope),
      true,
    ],
    [
      'grant type',
      { grant_type: ['implicit'] },
      variant((r) => (r.data.context.protocol.request.grant_type = 'implicit')),
      true,
    ],
    ['grant type absent', { grant_type: ['implicit'] }, base, false],
    ['issuer prefix and suffix', { issuer: { prefix: 'https://', suffix: '/oauth2/default' } }, base, true],
    ['issuer exact mismatch', { issuer: ['https://other/oauth2/default'] }, base, false],
    ['login suffix, case folded', { user_login: { suffix: '@ACME.EXAMPLE', ignore_case: true } }, base, true],
    ['login suffix, case kept', { user_login: { suffix: '@ACME.EXAMPLE' } }, base, false],
    [
      'login from session when profile has none',
      { user_login: ['ada.lovelace@acme.example'] },
      variant((r) => delete r.data.context.user.profile.login),
      true,
    ],
    ['profile field', { user_profile: { locale: ['en'], timeZone: { prefix: 'America/' } } }, base, true],
    ['profile field mismatch', { user_profile: { locale: ['fr'] } }, base, false],
    ['profile field absent', { user_profile: { department: { regex: '.*' } } }, base, false],
    [
      'numeric profile field compared as text',
      { user_profile: { level: ['3'] } },
      variant((r) => (r.data.context.user.profile.level = 3)),
      true,
    ],
    ['amr', { amr_any: ['MFA', 'PASSWORD'] }, base, true],
    ['amr missing', { amr_any: ['MFA'] }, base, false],
    ['mfa inactive', { mfa_active: false }, base, true],
    ['mfa active wanted', { mfa_active: true }, base, false],
    ['IPv4 in range', { ip_cidrs: ['127.0.0.0/8'] }, base, true],
    ['IPv4 out of range', { ip_cidrs: ['10.0.0.0/8', '192.0.2.1'] }, base, false],
    ['bare IPv4 address', { ip_cidrs: ['127.0.0.1'] }, base, true],
    [
      'IPv6 in range',
      { ip_cidrs: ['2001:db8::/32'] },
      variant((r) => (r.data.context.request.ipAddress = '2001:db8::17')),
      true,
    ],
    [
      'IPv4-mapped IPv6 in an IPv4 range',
      { ip_cidrs: ['10.0.0.0/8'] },
      variant((r) => (r.data.context.request.ipAddress = '::ffff:10.1.2.3')),
      true,
    ],
    ['not an IP', { ip_cidrs: ['0.0.0.0/0'] }, variant((r) => (r.data.context.request.ipAddress = 'redacted')), false],
    ['policy rule', { policy_rule_id: ['0pracmeSignOnRule1x7'] }, base, true],
    [
      'all conditions together',
      { client_id: ['customerPortalWeb'], scopes_any: ['openid'], mfa_active: false, ip_cidrs: ['127.0.0.1/32'] },
      base,
      true,
    ],
    ['one of many fails', { client_id: ['customerPortalWeb'], mfa_active: true }, base, false],
    [
      'not: skipped when all of it holds',
      { not: { client_id: ['customerPortalWeb'], mfa_active: false } },
      base,
      false,
    ],
    ['not: runs when part of it fails', { not: { client_id: ['customerPortalWeb'], mfa_active: true } }, base, true],
    ['no conditions', {}, base, true],
  ];
  it.each(cases)('%s', (_, conditions, req, expected) => {
    expect(matching(conditions, req)).toBe(expected);
  });
});

describe('compileCidrs', () => {
  it('accepts addresses and ranges of both families, refuses anything else', () => {
    const list = compileCidrs(['10.0.0.0/8', '::1', '2001:db8::/32'], 'x');
    expect(list.check('10.200.0.1', 'ipv4')).toBe(true);
    expect(list.check('11.0.0.1', 'ipv4')).toBe(false);
    expect(list.check('::1', 'ipv6')).toBe(true);
    for (const bad of ['10.0.0.0/8/1', '10.0.0/8', 'host/8', '10.0.0.0/-1', '10.0.0.0/x', '::/129'])
      expect(() => compileCidrs([bad], 'x')).toThrow(/not an IPv4\/IPv6/);
  });
});

describe('ipv4Ranges', () => {
  it('answers as BlockList does for every IPv4 address, leaving the other entries to it', () => {
    const cidrs = ['10.0.0.0/8', '192.0.2.7', '198.51.100.77/26', '0.0.0.0/32', '255.255.255.0/24', '172.16.0.0/12'];
    const list = compileCidrs(cidrs, 'x');
    const { v4, others } = ipv4Ranges([...cidrs, '2001:db8::/32']);
    expect(others).toEqual(['2001:db8::/32']);
    const within = (ip: string) => v4.some(([a, b]) => ipv4Number(ip) >= a && ipv4Number(ip) <= b);
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const samples = ['10.0.0.0', '9.255.255.255', '11.0.0.0', '192.0.2.7', '192.0.2.8', '198.51.100.64'];
    samples.push('198.51.100.127', '198.51.100.128', '0.0.0.0', '255.255.255.255', '172.31.255.255', '172.32.0.0');
    for (let i = 0; i < 2000; i++) samples.push([next() % 256, next() % 256, next() % 256, next() % 256].join('.'));
    for (const ip of samples) expect([ip, within(ip)]).toEqual([ip, list.check(ip, 'ipv4')]);
    for (const notV4 of ['01.2.3.4', '1.2.3', '1.2.3.4.5', '1.2.3.256', '::ffff:10.1.2.3', '', '1..2.3'])
      expect(ipv4Number(notV4)).toBe(-1);
  });
});
