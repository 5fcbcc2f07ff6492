/**
 * Runs a simulated org on its own, for trying hooklog's pollers by hand (and
 * for `hooklog demo` to build on):
 *
 *   npx tsx test/simulated-org/main.ts [--port 8089] [--events 10000] [--days 30] [--live-per-s 5] [--hook-ca cert.pem]
 *
 * Prints the base URL and an `orgs:` entry to paste into hooklog.yaml. It also
 * serves the hook management API (`hooklog hooks plan|apply|status`); its
 * verification calls and deliveries trust `--hook-ca` (hooklog's certificate,
 * when it serves HTTPS itself with one of its own), and live events are
 * delivered to the event hooks registered with it.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { HookManagementApi, history, legacyEvent, logEvent, SimulatedOrg } from './index.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8089' },
    events: { type: 'string', default: '10000' },
    days: { type: 'string', default: '30' },
    'live-per-s': { type: 'string', default: '5' },
    'hook-ca': { type: 'string' },
  },
  strict: true,
});

const sim = await SimulatedOrg.start({ port: Number(values.port) });
const hooks = new HookManagementApi(sim, values['hook-ca'] ? { ca: readFileSync(values['hook-ca']) } : {});
sim.use(hooks);
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
`);
process.once('SIGINT', () => void sim.stop().then(() => process.exit(0)));
