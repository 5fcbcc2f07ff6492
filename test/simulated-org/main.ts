/**
 * Runs a simulated org on its own, for trying hooklog's pollers by hand (and
 * for `hooklog demo` to build on):
 *
 *   npx tsx test/simulated-org/main.ts [--port 8089] [--events 10000] [--days 30] [--live-per-s 5] [--hook-ca cert.pem]
 *     [--issuer URL] [--oidc [--user LOGIN:PASSWORD:GROUP[,GROUP…]]… [--users users.yaml]
 *     [--console-url http://127.0.0.1:8080] [--client-id hooklog-console] [--client-secret S]]
 *
 * Prints the base URL and an `orgs:` entry to paste into hooklog.yaml. It also
 * serves the hook management API (`hooklog hooks plan|apply|status`); its
 * verification calls and deliveries trust `--hook-ca` (hooklog's certificate,
 * when it serves HTTPS itself with one of its own), and live events are
 * delivered to the event hooks registered with it. With `--issuer` (hooklog's URL) the
 * org also registers hooklog as its security events provider (SETs verified against the keys at
 * <issuer>/.well-known/ssf-configuration) and takes management actions on users ann, bob and cid
 * (00uann, …), printing each SET and each action as it happens (docs/respond/response.md). With `--oidc` it
 * is also an OpenID Connect provider for hooklog's console (oidc.ts): the users of `--user` and `--users`
 * (or ada, an analyst, and vic, a viewer) sign in on its login page, their groups in the ID token; it prints
 * them and the `console:` section to paste (docs/analyze/console.md, examples/console/hooklog.yaml). Its
 * directory (ann, an administrator, bob and cid) is what identity_sync reads (docs/operate/identity-sync.md).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SIM_OPTIONS } from './main-options.js';
import { oidcSetup, describeOidc, SimUsageError, type OidcSetup } from './oidc-options.js';
import {
  Directory,
  DirectoryApi,
  HookManagementApi,
  history,
  legacyEvent,
  logEvent,
  SecurityEventsApi,
  OidcSignIn,
  SimulatedOrg,
  UsersApi,
} from './index.js';

const { values } = parseArgs({
  options: SIM_OPTIONS,
  strict: true,
});

let oidc: OidcSetup | undefined;
try {
  oidc = oidcSetup({
    oidc: values.oidc,
    user: values.user,
    usersFile: values.users === undefined ? undefined : { path: values.users, text: readUsers(values.users) },
    clientId: values['client-id'],
    clientSecret: values['client-secret'],
    consoleUrl: values['console-url'],
  });
} catch (err) {
  if (!(err instanceof SimUsageError)) throw err;
  process.stderr.write(`${err.code}: ${err.message}\n`);
  process.exit(2);
}

function readUsers(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new SimUsageError(`--users ${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

const sim = await SimulatedOrg.start({ port: Number(values.port) });
const hooks = new HookManagementApi(sim, values['hook-ca'] ? { ca: readFileSync(values['hook-ca']) } : {});
sim.use(hooks);
// The directory hooklog's identity_sync reads (docs/operate/identity-sync.md): ann administers, bob and cid work.
const directory = new Directory();
directory.addGroup('00gadmins', 'Administrators', { roles: ['ORG_ADMIN'] });
directory.addGroup('00gstaff', 'Staff');
for (const name of ['ann', 'bob', 'cid']) {
  directory.addUser(`00u${name}`, `${name}@example.com`);
  directory.addMember('00gstaff', `00u${name}`);
}
directory.addMember('00gadmins', '00uann');
directory.assignUserRole('00uann', 'SUPER_ADMIN');
sim.use(new DirectoryApi(directory));
if (oidc) sim.use(new OidcSignIn([oidc.client], oidc.users));
if (values.issuer) {
  const sets = new SecurityEventsApi({
    issuer: values.issuer,
    wellKnownUrl: `${values.issuer}/.well-known/ssf-configuration`,
  });
  sets.onReceive = (s) => {
    const [type, e] = Object.entries(s.claims.events)[0]!;
    const who = JSON.stringify((e.subject as { user: unknown }).user);
    const levels = `${String(e.previous_level)} → ${String(e.current_level)}`;
    process.stdout.write(
      `SET accepted: ${type.split('/').pop()} ${who} ${levels} (jti ${s.jti}${s.repeat ? ', a repeat' : ''})\n`,
    );
  };
  const users = new UsersApi();
  for (const name of ['ann', 'bob', 'cid']) users.addUser(`00u${name}`, `${name}@example.com`);
  users.beforePerform = (action, userId) => void process.stdout.write(`management action: ${action} ${userId}\n`);
  sim.use(sets).use(users);
}
const now = Date.now();
sim.addLogEvents(history({ count: Number(values.events), days: Number(values.days), now, kind: 'log' }));
sim.addLegacyEvents(
  history({ count: Math.ceil(Number(values.events) / 10), days: Number(values.days), now, kind: 'legacy' }),
);
let n = 0;
const perSecond = Number(values['live-per-s']);
if (perSecond > 0) {
  setInterval(() => {
    const added = sim.addLogEvents(
      Array.from({ length: perSecond }, () => ({
        event: logEvent(n++),
        published: Date.now() - Math.floor(Math.random() * 2000),
      })),
    );
    void hooks.deliver(added);
    if (n % 50 < perSecond) sim.addLegacyEvents([{ event: legacyEvent(n), published: Date.now() }]);
  }, 1000);
}
setInterval(() => {
  if (sim.violations.length > 0)
    process.stderr.write(
      `rule violations so far: ${sim.violations.length}; last: ${sim.violations[sim.violations.length - 1]}\n`,
    );
}, 10_000);
process.stdout
  .write(`simulated org at ${sim.url} (${sim.logs.length} System Log events, ${sim.legacy.length} legacy events)
orgs:
  - id: simulated
    base_url: ${sim.url}
    auth: { ssws: { token: sim-token } }
    system_log: { start: ${values.days}d, poll_interval_ms: 5000 }
    legacy_events: { enabled: true, start: ${values.days}d, poll_interval_ms: 5000 }
    identity_sync: { enabled: true, interval_ms: 60000, full_interval_ms: 600000 }
${oidc ? describeOidc(oidc, sim.url, 'simulated') : ''}`);
process.once('SIGINT', () => void sim.stop().then(() => process.exit(0)));
