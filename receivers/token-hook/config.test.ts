/**
 * The token_hooks config section through the real loader (parseConfig):
 * every reserved claim of every token type is refused at load with the rule
 * named, and so are the other mistakes that would reach an answer.
 */
import { describe, expect, it } from 'vitest';
import { HooklogError } from '../../platform/errors.js';
import { parseConfig } from '../../cli/config/load.js';
import { redactSecrets } from '../../platform/config/secrets.js';
import { RESERVED_CLAIMS } from './protocol.js';
import { HOOK_SECRET } from './testing.js';

const hook = (rules: unknown[], over: Record<string, unknown> = {}) => ({
  id: 'th',
  org: 'acme',
  auth: { type: 'header', secrets: [HOOK_SECRET] },
  rules,
  ...over,
});
const load = (...hooks: unknown[]) => parseConfig({ token_hooks: hooks }, {});

function loadError(...hooks: unknown[]): string {
  try {
    load(...hooks);
  } catch (err) {
    expect(err).toBeInstanceOf(HooklogError);
    expect((err as HooklogError).code).toBe('CONFIG_INVALID');
    return (err as Error).message;
  }
  throw new Error('config was accepted');
}

const addRule = (name: string, token: string, claim: string) => ({
  name,
  actions: [{ add: { tokens: token, claim, value: 'x' } }],
});

describe('token_hooks config: reserved claims', () => {
  const cases: Array<{
    claim: string;
    refusedIn: Array<'id' | 'access' | 'both'>;
    acceptedIn: Array<'id' | 'access'>;
  }> = [
    ...RESERVED_CLAIMS.both.map((claim) => ({
      claim,
      refusedIn: ['id', 'access', 'both'] as Array<'id' | 'access' | 'both'>,
      acceptedIn: [] as Array<'id' | 'access'>,
    })),
    ...RESERVED_CLAIMS.idOnly.map((claim) => ({
      claim,
      refusedIn: ['id', 'both'] as Array<'id' | 'access' | 'both'>,
      acceptedIn: ['access'] as Array<'id' | 'access'>,
    })),
    ...RESERVED_CLAIMS.accessOnly.map((claim) => ({
      claim,
      refusedIn: ['access', 'both'] as Array<'id' | 'access' | 'both'>,
      acceptedIn: ['id'] as Array<'id' | 'access'>,
    })),
  ];

  it('has the protocol lists (protocols.md §2) with no claim in two lists', () => {
    expect(RESERVED_CLAIMS.both).toHaveLength(12);
    expect(RESERVED_CLAIMS.idOnly).toHaveLength(43);
    expect(RESERVED_CLAIMS.accessOnly).toEqual([
      'as_uri',
      'authorization_details',
      'rpt',
      'rsi',
      'scp',
      'uid',
      'username',
    ]);
    const all = [...RESERVED_CLAIMS.both, ...RESERVED_CLAIMS.idOnly, ...RESERVED_CLAIMS.accessOnly];
    expect(new Set(all).size).toBe(all.length);
  });

  it.each(cases)(
    'refuses "$claim" in $refusedIn tokens at load, naming the rule; accepts it in $acceptedIn',
    ({ claim, refusedIn, acceptedIn }) => {
      for (const token of refusedIn) {
        for (const op of ['add', 'replace'] as const) {
          const message = loadError(
            hook([
              { name: 'fine', actions: [{ add: { tokens: 'id', claim: 'dept', value: 1 } }] },
              { name: `touch-${claim}`, actions: [{ [op]: { tokens: token, claim, value: 'x' } }] },
            ]),
          );
          expect(message).toContain('token_hooks.0.rules.1');
          expect(message).toContain(`rule "touch-${claim}"`);
          expect(message).toContain(`claim "${claim}" is reserved`);
        }
        const removal = loadError(hook([{ name: 'rm', actions: [{ remove: { tokens: token, claim, path: ['0'] } }] }]));
        expect(removal).toContain('rule "rm"');
        expect(removal).toContain(`claim "${claim}" is reserved`);
      }
      for (const token of acceptedIn) expect(() => load(hook([addRule('ok', token, claim)]))).not.toThrow();
    },
  );

  it('lets aud and sub be changed in access tokens only', () => {
    for (const claim of ['aud', 'sub']) {
      expect(() => load(hook([addRule('r', 'access', claim)]))).not.toThrow();
      expect(loadError(hook([addRule('r', 'id', claim)]))).toContain(`claim "${claim}" is reserved in ID tokens`);
    }
  });

  it('reports every broken rule of a hook at once', () => {
    const message = loadError(
      hook([addRule('one', 'id', 'nonce'), addRule('two', 'id', 'dept'), addRule('three', 'access', 'scp')]),
    );
    expect(message).toContain('config key "token_hooks.0.rules.0": rule "one"');
    expect(message).toContain('config key "token_hooks.0.rules.2": rule "three"');
    expect(message).not.toContain('rule "two"');
    // Shape errors (zod's own) come first: cross-field checks run on a well-formed hook.
    expect(loadError(hook([addRule('bad', 'ok', 'x')]))).toContain('token_hooks.0.rules.0.actions.0.add.tokens');
  });
});

describe('token_hooks config: other cross-field checks name the rule', () => {
  const cases: Array<[string, unknown, string[]]> = [
    [
      'lifetime below 300',
      [{ name: 'short', actions: [{ lifetime: { tokens: 'access', seconds: 299 } }] }],
      ['rule "short"', '299 s is outside 300..86400'],
    ],
    [
      'lifetime above 86400',
      [{ name: 'long', actions: [{ lifetime: { tokens: 'both', seconds: 86_401 } }] }],
      ['rule "long"', 'outside 300..86400'],
    ],
    [
      'two value sources',
      [{ name: 'two', actions: [{ add: { tokens: 'id', claim: 'c', value: 1, template: '{{user.id}}' } }] }],
      ['rule "two"', 'exactly one of value, template or lookup'],
    ],
    [
      'no value source',
      [{ name: 'none', actions: [{ replace: { tokens: 'id', claim: 'c' } }] }],
      ['rule "none"', 'exactly one of value, template or lookup'],
    ],
    [
      'null literal',
      [{ name: 'nul', actions: [{ add: { tokens: 'id', claim: 'c', value: null } }] }],
      ['rule "nul"', 'null'],
    ],
    [
      'two kinds in one action',
      [{ name: 'k', actions: [{ add: { tokens: 'id', claim: 'c', value: 1 }, remove: { tokens: 'id', claim: 'd' } }] }],
      ['rule "k"', 'exactly one of add, replace, remove, lifetime, deny'],
    ],
    [
      'unknown template variable',
      [{ name: 'tpl', actions: [{ add: { tokens: 'id', claim: 'c', template: '{{user.mail}}' } }] }],
      ['rule "tpl"', 'unknown variable "user.mail"'],
    ],
    [
      'unbalanced template',
      [{ name: 'tpl2', actions: [{ add: { tokens: 'id', claim: 'c', template: 'x {{user.id' } }] }],
      ['rule "tpl2"', 'unbalanced'],
    ],
    [
      'undeclared lookup table',
      [
        {
          name: 'lk',
          actions: [
            { add: { tokens: 'id', claim: 'c', lookup: { table: 'nope', key: '{{user.login}}', column: 'd' } } },
          ],
        },
      ],
      ['rule "lk"', 'lookup table "nope" is not declared'],
    ],
    [
      'append with replace',
      [{ name: 'app', actions: [{ replace: { tokens: 'id', claim: 'arr', path: ['-'], value: 1 } }] }],
      ['rule "app"', '"-" (append) may only be the last path step of an add'],
    ],
    [
      'append not last',
      [{ name: 'app2', actions: [{ add: { tokens: 'id', claim: 'arr', path: ['-', 'x'], value: 1 } }] }],
      ['rule "app2"', '"-"'],
    ],
    [
      'bad CIDR',
      [{ name: 'net', when: { ip_cidrs: ['10.0.0.0/33'] }, actions: [{ deny: { error_summary: 'no' } }] }],
      ['rule "net"', 'when.ip_cidrs', '10.0.0.0/33'],
    ],
    [
      'bad regex',
      [{ name: 're', when: { user_login: { regex: '([' } }, actions: [{ deny: { error_summary: 'no' } }] }],
      ['rule "re"', 'when.user_login: invalid regex'],
    ],
    [
      'regex with a backreference',
      [{ name: 're2', when: { user_login: { regex: '^(a+)\\1$' } }, actions: [{ deny: { error_summary: 'no' } }] }],
      ['rule "re2"', 'when.user_login: invalid regex', 'cannot be matched in time linear in the input'],
    ],
    [
      'regex with lookahead',
      [{ name: 're3', when: { user_login: { regex: '^(?=adm)' } }, actions: [{ deny: { error_summary: 'no' } }] }],
      ['rule "re3"', 'when.user_login: invalid regex', 'lookaround'],
    ],
    [
      'case-insensitive regex',
      [
        {
          name: 're4',
          when: { user_login: { regex: '^admin', ignore_case: true } },
          actions: [{ deny: { error_summary: 'no' } }],
        },
      ],
      ['rule "re4"', 'ignore_case does not apply to a regex', '[Aa]dmin'],
    ],
    [
      'empty string test',
      [{ name: 'st', when: { client_id: { ignore_case: true } }, actions: [{ deny: { error_summary: 'no' } }] }],
      ['rule "st"', 'when.client_id'],
    ],
    [
      'empty not',
      [{ name: 'nt', when: { not: {} }, actions: [{ deny: { error_summary: 'no' } }] }],
      ['rule "nt"', 'when.not: has no conditions'],
    ],
    [
      'deny with other actions',
      [{ name: 'dn', actions: [{ deny: { error_summary: 'no' } }, { add: { tokens: 'id', claim: 'c', value: 1 } }] }],
      ['rule "dn"', 'a deny rule carries no other action'],
    ],
    [
      'duplicate rule names',
      [addRule('same', 'id', 'a'), addRule('same', 'id', 'b')],
      ['rule "same": duplicate rule name (also rules.0)'],
    ],
  ];

  it.each(cases)('%s', (_, rules, fragments) => {
    const message = loadError(hook(rules as unknown[]));
    for (const f of fragments) expect(message).toContain(f);
  });

  it('refuses a csv lookup without key, duplicate lookups and duplicate hook ids', () => {
    const lookups = [
      { name: 'emp', file: 'x.csv', format: 'csv' },
      { name: 'emp', file: 'y.json', format: 'json' },
    ];
    const message = loadError(hook([], { lookups }));
    expect(message).toContain('token_hooks.0.lookups.0.key');
    expect(message).toContain('duplicate lookup name "emp"');
    expect(loadError(hook([]), hook([]))).toContain(
      'config key "token_hooks.1.id": duplicate token hook id "th" (also token_hooks.0.id)',
    );
  });

  it('refuses unknown keys, a plain-http issuer and symmetric algorithms', () => {
    expect(loadError(hook([{ name: 'r', whn: {}, actions: [{ deny: { error_summary: 'x' } }] }]))).toMatch(
      /token_hooks\.0\.rules\.0.*"whn"/,
    );
    const oauth = (over: Record<string, unknown>) =>
      hook([], {
        auth: {
          type: 'oauth',
          issuer: 'https://acme.example.com/oauth2/default',
          audience: 'api://hooklog',
          scope: 'hooklog.hook',
          ...over,
        },
      });
    expect(() => load(oauth({}))).not.toThrow();
    expect(() => load(oauth({ issuer: 'http://127.0.0.1:8080/oauth2/default' }))).not.toThrow();
    expect(loadError(oauth({ issuer: 'http://acme.example.com/oauth2/default' }))).toContain(
      'config key "token_hooks.0.auth.issuer": must be https',
    );
    expect(loadError(oauth({ algorithms: ['HS256'] }))).toContain('token_hooks.0.auth.algorithms.0');
    expect(loadError(oauth({ algorithms: ['none'] }))).toContain('token_hooks.0.auth.algorithms.0');
  });

  it('prints rules intact but secrets redacted (no option is named like a secret)', () => {
    const printed = JSON.stringify(redactSecrets(load(hook([addRule('r', 'access', 'dept')]))));
    expect(printed).toContain('"tokens":"access"');
    expect(printed).not.toContain(HOOK_SECRET);
  });

  it('fills the documented defaults and accepts every action and condition kind', () => {
    const cfg = load(
      hook([
        {
          name: 'everything',
          when: {
            client_id: ['c1'],
            scopes_any: ['openid'],
            scopes_all: ['openid', 'email'],
            grant_type: ['refresh_token'],
            issuer: { prefix: 'https://' },
            user_login: { suffix: '@example.com', ignore_case: true },
            user_profile: { department: ['R&D'] },
            amr_any: ['MFA'],
            mfa_active: true,
            ip_cidrs: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'],
            policy_rule_id: ['0pr1'],
            not: { client_id: { regex: '^test-' } },
          },
          actions: [
            { add: { tokens: 'both', claim: 'https://example.com/roles', path: ['-'], value: 'r' } },
            { replace: { tokens: 'id', claim: 'profile', path: ['dept', 0], template: '{{user.profile.department}}' } },
            { remove: { tokens: 'access', claim: 'legacy' } },
            { lifetime: { tokens: 'access', seconds: 300 } },
            { lifetime: { tokens: 'id', seconds: 86_400 } },
          ],
        },
        { name: 'deny', actions: [{ deny: { error_summary: 'Not allowed.' } }] },
      ]),
    );
    const h = cfg.token_hooks[0]!;
    expect(h.on_error).toBe('allow');
    expect(h.max_request_bytes).toBe(1024 * 1024);
    expect(h.audit).toEqual({
      enabled: true,
      queue_capacity: 10_000,
      batch_records: 100,
      flush_interval_ms: 50,
      spool_max_bytes: 256 * 1024 ** 2,
    });
    expect(h.rules[0]!.stop).toBe(false);
    expect(Object.isFrozen(h.rules[0]!.actions)).toBe(true);
  });
});
