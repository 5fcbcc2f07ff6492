/**
 * The simulated org's `--oidc` options: users from `--user` flags and a
 * `--users` file (or the two defaults), the console client, and the errors a
 * wrong option gets (SIM_USAGE, naming the option and showing the value
 * bounded). test/e2e/console-try.test.ts runs main.ts with them.
 */
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_USERS, describeOidc, oidcSetup, parseUserFlag, parseUsersFile } from './oidc-options.js';

const usage = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return { code: (err as { code?: string }).code, message: (err as Error).message };
  }
  return undefined;
};

describe('--user LOGIN:PASSWORD:GROUP[,GROUP…]', () => {
  it('reads the login, the password (which may hold colons) and the groups', () => {
    expect(parseUserFlag('ada@example.com:ada:soc,auditors')).toEqual({
      login: 'ada@example.com',
      password: 'ada',
      groups: ['soc', 'auditors'],
    });
    expect(parseUserFlag('bo:p:a:ss:soc').password).toBe('p:a:ss');
  });

  it.each(['ada', 'ada:pw', ':pw:soc', 'ada::soc', 'ada:pw:', 'ada:pw:soc,', 'a da:pw:soc'])(
    'refuses %j, saying what it expects',
    (text) => {
      expect(usage(() => parseUserFlag(text))).toEqual({
        code: 'SIM_USAGE',
        message: expect.stringContaining(`--user ${JSON.stringify(text)}: expected LOGIN:PASSWORD:GROUP[,GROUP…]`),
      });
    },
  );

  it('shows a long value bounded', () => {
    expect(usage(() => parseUserFlag('x'.repeat(5000)))?.message).toContain(`"${'x'.repeat(60)}…"`);
  });
});

describe('--users file', () => {
  it('reads users: [{ login, password, name?, groups }] (YAML or JSON), groups with spaces too', () => {
    const text = 'users:\n  - { login: ada@example.com, password: ada, groups: [Security Team] }\n';
    expect(parseUsersFile(text, 'u.yaml')).toEqual([
      { login: 'ada@example.com', password: 'ada', groups: ['Security Team'] },
    ]);
    expect(parseUsersFile('{"users":[{"login":"b","password":"p","name":"B","groups":["g"]}]}', 'u.json')).toHaveLength(
      1,
    );
  });

  it.each([
    ['users: [', 'not YAML'],
    ['- ada', '(top level)'],
    ['users: []', 'users'],
    ['users: [{ login: ada, password: pw }]', 'users.0.groups'],
    ['users: [{ login: ada, password: pw, groups: [] }]', 'users.0.groups'],
    ['users: [{ login: ada, password: pw, groups: [g], role: analyst }]', 'users.0'],
    ['users: [{ login: a da, password: pw, groups: [g] }]', 'users.0.login'],
  ])('refuses %j, naming the file and the key (%s)', (text, where) => {
    const e = usage(() => parseUsersFile(text, 'users.yaml'));
    expect(e?.code).toBe('SIM_USAGE');
    expect(e?.message).toContain(`--users users.yaml: ${where}`);
  });
});

describe('oidcSetup', () => {
  it('is off without --oidc; the options that need it are refused without it', () => {
    expect(oidcSetup({})).toBeUndefined();
    expect(usage(() => oidcSetup({ user: ['a:b:c'] }))?.message).toBe('--user needs --oidc');
    expect(usage(() => oidcSetup({ clientId: 'x', consoleUrl: 'http://h' }))?.message).toBe(
      '--client-id, --console-url need --oidc',
    );
  });

  it('defaults: an analyst and a viewer, the public client hooklog-console, hooklog at http://127.0.0.1:8080', () => {
    expect(oidcSetup({ oidc: true })).toEqual({
      users: DEFAULT_USERS,
      consoleUrl: 'http://127.0.0.1:8080',
      client: { clientId: 'hooklog-console', redirectUris: ['http://127.0.0.1:8080/console/auth/callback'] },
    });
  });

  it('takes users from flags and a file together, a client secret, and the console origin', () => {
    const s = oidcSetup({
      oidc: true,
      user: ['ada@example.com:ada:soc'],
      usersFile: { path: 'u.yaml', text: 'users: [{ login: bob, password: b, groups: [aud] }]' },
      clientId: 'my-console',
      clientSecret: 'shh',
      consoleUrl: 'https://hooklog.test:8443/',
    });
    expect(s?.users.map((u) => u.login)).toEqual(['ada@example.com', 'bob']);
    expect(s?.client).toEqual({
      clientId: 'my-console',
      clientSecret: 'shh',
      redirectUris: ['https://hooklog.test:8443/console/auth/callback'],
    });
  });

  it.each([
    [{ user: ['a:1:g', 'a:2:h'] }, 'user "a" is given twice'],
    [{ consoleUrl: 'localhost:8080' }, '--console-url "localhost:8080": an http(s) origin without a path'],
    [{ consoleUrl: 'nope' }, '--console-url "nope": not a URL'],
    [{ consoleUrl: 'http://h/console' }, '--console-url "http://h/console": an http(s) origin without a path'],
    [{ clientId: 'a b' }, `--client-id "a b": letters, digits, '.', '_' and '-' only`],
    [{ clientSecret: '' }, '--client-secret is empty'],
  ])('refuses %j', (flags, message) => {
    expect(usage(() => oidcSetup({ oidc: true, ...flags }))?.message).toContain(message);
  });
});

describe('what main.ts prints', () => {
  it("lists the users and a console: section hooklog's config takes, each group granted the org", () => {
    const s = oidcSetup({
      oidc: true,
      user: ['ada@example.com:ada:hooklog-analysts,Security Team', 'vic@example.com:vic:hooklog-viewers'],
      clientSecret: 'shh',
    })!;
    const text = describeOidc(s, 'http://127.0.0.1:8089', 'simulated');
    expect(text).toContain('  ada@example.com  ada  hooklog-analysts,Security Team\n');
    const yaml = parseYaml(text.slice(text.indexOf('console:'))) as { console: Record<string, unknown> };
    expect(yaml.console).toEqual({
      enabled: true,
      public_url: 'http://127.0.0.1:8080',
      session_secret: '${CONSOLE_SESSION_SECRET}',
      oidc: {
        issuer: 'http://127.0.0.1:8089',
        client_id: 'hooklog-console',
        client_secret: '${CONSOLE_CLIENT_SECRET}',
        grants: [
          { group: 'hooklog-analysts', orgs: ['simulated'], role: 'analyst' },
          { group: 'Security Team', orgs: ['simulated'], role: 'analyst' },
          { group: 'hooklog-viewers', orgs: ['simulated'], role: 'viewer' },
        ],
      },
    });
    expect(text).not.toContain('shh');
  });
});
