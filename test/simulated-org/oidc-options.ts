/**
 * The simulated org's `--oidc` options (main.ts): who may sign in (`--user`
 * flags, a `--users` file, or two default users), the console client it knows
 * (`--client-id`, `--client-secret`, `--console-url`), and the `console:`
 * section to paste into hooklog's config. Pure: main.ts reads the file and
 * prints; a wrong option is a SimUsageError naming it, shown bounded.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { OidcClientRegistration, SimUser } from './oidc.js';

/** A wrong command-line option or users file: main.ts prints it and exits 2. */
export class SimUsageError extends Error {
  readonly code = 'SIM_USAGE' as const;
}

/** A value from the command line or a file, clipped for an error message (it may be anything). */
const shown = (v: string) => JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v);

/** A group name as a YAML flow scalar: bare when it is plainly a word, else quoted (JSON is YAML). */
const yamlText = (v: string) => (/^[\w@.-]+$/.test(v) ? v : JSON.stringify(v));

const userSchema = z.strictObject({
  login: z.string().regex(/^\S+$/, 'a login without spaces'),
  password: z.string().min(1),
  name: z.string().min(1).optional(),
  groups: z.array(z.string().min(1)).min(1),
});
const usersFileSchema = z.strictObject({ users: z.array(userSchema).min(1) });

/** Who signs in when no user is given: one of each role the example config grants. */
export const DEFAULT_USERS: readonly SimUser[] = [
  { login: 'ada@example.com', password: 'ada', groups: ['hooklog-analysts'] },
  { login: 'vic@example.com', password: 'vic', groups: ['hooklog-viewers'] },
];
/** The roles examples/console/hooklog.yaml grants the default users' groups; any other group is printed as analyst. */
const DEFAULT_ROLES: Readonly<Record<string, 'analyst' | 'viewer'>> = {
  'hooklog-analysts': 'analyst',
  'hooklog-viewers': 'viewer',
};

/** `--user LOGIN:PASSWORD:GROUP[,GROUP…]` (the password is the text between the first and the last colon). */
export function parseUserFlag(text: string): SimUser {
  const first = text.indexOf(':');
  const last = text.lastIndexOf(':');
  const login = text.slice(0, first);
  const password = text.slice(first + 1, last);
  const groups = text.slice(last + 1).split(',');
  if (first <= 0 || last === first || password === '' || groups.some((g) => !/^\S(.*\S)?$/.test(g)) || /\s/.test(login))
    throw new SimUsageError(
      `--user ${shown(text)}: expected LOGIN:PASSWORD:GROUP[,GROUP…], e.g. --user ada@example.com:ada:hooklog-analysts`,
    );
  return { login, password, groups };
}

/** A `--users` file: YAML (or JSON) `users: [{ login, password, name?, groups: [...] }]`. */
export function parseUsersFile(text: string, path: string): SimUser[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new SimUsageError(`--users ${path}: not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const parsed = usersFileSchema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new SimUsageError(
      `--users ${path}: ${issue.path.join('.') || '(top level)'}: ${issue.message} ` +
        '(expected users: [{ login, password, name?, groups: [group, …] }])',
    );
  }
  return parsed.data.users;
}

export interface OidcFlags {
  readonly oidc?: boolean;
  readonly user?: readonly string[];
  readonly usersFile?: { readonly path: string; readonly text: string };
  readonly clientId?: string;
  readonly clientSecret?: string;
  readonly consoleUrl?: string;
}

export interface OidcSetup {
  readonly users: readonly SimUser[];
  readonly client: OidcClientRegistration;
  /** hooklog's console origin: its `console.public_url`. */
  readonly consoleUrl: string;
}

/** The sign-in the flags ask for, undefined without `--oidc`; a SimUsageError for any option that cannot be used. */
export function oidcSetup(f: OidcFlags): OidcSetup | undefined {
  if (!f.oidc) {
    const stray = [
      f.user?.length ? '--user' : '',
      f.usersFile ? '--users' : '',
      f.clientId !== undefined ? '--client-id' : '',
      f.clientSecret !== undefined ? '--client-secret' : '',
      f.consoleUrl !== undefined ? '--console-url' : '',
    ].filter(Boolean);
    if (stray.length > 0) throw new SimUsageError(`${stray.join(', ')} ${stray.length > 1 ? 'need' : 'needs'} --oidc`);
    return undefined;
  }
  const given = [
    ...(f.user ?? []).map(parseUserFlag),
    ...(f.usersFile ? parseUsersFile(f.usersFile.text, f.usersFile.path) : []),
  ];
  const users = given.length > 0 ? given : DEFAULT_USERS;
  const twice = users.find((u, i) => users.findIndex((v) => v.login === u.login) !== i);
  if (twice) throw new SimUsageError(`user ${shown(twice.login)} is given twice`);
  const consoleUrl = f.consoleUrl ?? 'http://127.0.0.1:8080';
  let origin: URL;
  try {
    origin = new URL(consoleUrl);
  } catch {
    throw new SimUsageError(`--console-url ${shown(consoleUrl)}: not a URL (hooklog's console.public_url)`);
  }
  if (!/^https?:$/.test(origin.protocol) || origin.pathname !== '/' || origin.search || origin.hash)
    throw new SimUsageError(
      `--console-url ${shown(consoleUrl)}: an http(s) origin without a path, as in hooklog's console.public_url`,
    );
  const clientId = f.clientId ?? 'hooklog-console';
  if (!/^[\w.-]+$/.test(clientId))
    throw new SimUsageError(`--client-id ${shown(clientId)}: letters, digits, '.', '_' and '-' only`);
  if (f.clientSecret === '') throw new SimUsageError('--client-secret is empty (leave it out for a public client)');
  return {
    users,
    consoleUrl: origin.origin,
    client: {
      clientId,
      ...(f.clientSecret !== undefined ? { clientSecret: f.clientSecret } : {}),
      redirectUris: [`${origin.origin}/console/auth/callback`],
    },
  };
}

/**
 * What main.ts prints: the users who may sign in, and the `console:` section
 * for hooklog's config (each of their groups granted the org `orgId`).
 */
export function describeOidc(s: OidcSetup, issuer: string, orgId: string): string {
  const groups = [...new Set(s.users.flatMap((u) => u.groups))];
  const width = Math.max(...s.users.map((u) => u.login.length));
  return [
    `OpenID Connect sign-in: issuer ${issuer}, client ${s.client.clientId} (${s.client.clientSecret === undefined ? 'public: PKCE only' : 'with a client secret'}), redirect URI ${s.client.redirectUris[0]}`,
    'users (login, password, groups):',
    ...s.users.map((u) => `  ${u.login.padEnd(width)}  ${u.password}  ${u.groups.join(',')}`),
    'console:',
    '  enabled: true',
    `  public_url: ${s.consoleUrl}`,
    '  session_secret: ${CONSOLE_SESSION_SECRET}        # 32+ characters',
    '  oidc:',
    `    issuer: ${issuer}`,
    `    client_id: ${s.client.clientId}`,
    ...(s.client.clientSecret === undefined ? [] : ['    client_secret: ${CONSOLE_CLIENT_SECRET}']),
    '    grants:                                        # role viewer reads; analyst also changes alerts',
    ...groups.map((g) => `      - { group: ${yamlText(g)}, orgs: [${orgId}], role: ${DEFAULT_ROLES[g] ?? 'analyst'} }`),
    '',
  ].join('\n');
}
