/**
 * Response bench (not part of `npm test`; needs a Kafka broker: KAFKA_BROKERS=host:port):
 *
 *   npm run build && KAFKA_BROKERS=127.0.0.1:9092 npx tsx bench/response/run.ts [--runs 5]
 *
 * Time from a finding to the SET's 202: one real `hooklog start` (the built CLI, roles receivers and
 * alerting) with the impossible-travel rule declaring high risk and a response section sending SETs
 * to a simulated org, which verifies each against the JWKS it fetched from hooklog's well-known URL
 * and answers 202. Per run, a fresh user's impossible trip arrives by the event hook (Paris, New York
 * 5 s later, a tick moving the watermark); measured until the org has accepted the user's SET:
 *
 *   - from the delivery's 204 (the finding's events acknowledged), and
 *   - from the alert's append to `<prefix>.alerts` (the finding made; its record timestamp).
 *
 * Prints each run to stderr and the medians (min, max) to stdout with the machine's load average,
 * before and after. The first SET of a process also fetches the JWKS (the org's side): run 0 is a
 * warm-up and not counted.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';
import { riskTravelEvents, riskTravelRules } from '../../consumers/alerting/testing/events.js';
import { USER_RISK_CHANGE } from '../../consumers/response/config.js';
import { silentLogger } from '../../platform/log.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { freePort, responseSections, startResponseOrg } from '../../test/e2e/response.js';
import { delivery } from '../../test/fixtures/index.js';
import { postDelivery, writeTestConfig } from '../../test/support/hooklog-config.js';
import { spawnHooklog } from '../../test/support/instances.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { summarize } from '../pipeline/stats.js';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '5' } }, strict: true });
const RUNS = Number(args.runs);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a positive integer, got ${args.runs}`);
const BROKERS = process.env.KAFKA_BROKERS;
if (!BROKERS) throw new Error('bench/response needs a Kafka broker: KAFKA_BROKERS=host:port');
process.env.HOOKLOG_CLI ??= 'built';
if (process.env.HOOKLOG_CLI === 'built' && !existsSync(new URL('../../dist/hooklog.js', import.meta.url)))
  throw new Error('bench/response runs the built CLI: run `npm run build` first');
const say = (m: string) => process.stderr.write(`${m}\n`);
const out = (m: string) => process.stdout.write(`${m}\n`);
const GAP_MS = 5_000;

const loadBefore = loadavg();
const port = await freePort();
const issuer = `http://127.0.0.1:${port}`;
const inst = writeTestConfig({ kafkaBrokers: BROKERS });
const org = await startResponseOrg(inst.org, issuer, ['tok-bench']);
const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
const prefix = base.stream!.topic_prefix as string;
writeFileSync(
  inst.configPath,
  stringify({
    ...base,
    roles: ['receivers', 'alerting'],
    server: { host: '127.0.0.1', port },
    alerting: {
      group: randomName('alerting'),
      rules: riskTravelRules('1h'),
      clickhouse: false,
      allowed_lateness_ms: 0,
      max_batch_wait_ms: 50,
    },
    ...responseSections([org], issuer, randomName('resp'), 'off'),
  }),
);
const hooklog = spawnHooklog('bench', ['--config', inst.configPath], { ORG_TOKEN: 'tok-bench' });
const stream = await openKafkaStream({
  brokers: BROKERS.split(','),
  clientId: randomName('bench'),
  logger: silentLogger(),
});
try {
  await hooklog.started(120_000);
  // When each alert was appended (its record timestamp), by the user it names.
  const alerted = new Map<string, number>();
  await stream.watch(`${prefix}.alerts`, (records) => {
    for (const r of records) {
      const alert = JSON.parse(r.value.toString()) as { risk?: { entity?: { login?: string } } };
      const user = alert.risk?.entity?.login?.split('@')[0];
      if (user && !alerted.has(user)) alerted.set(user, r.timestamp);
    }
  });
  const accepted = new Map<string, number>();
  org.sets.onReceive = (s) => {
    const e = s.claims.events[USER_RISK_CHANGE]!;
    const email = (e.subject as { user: { email?: string } }).user.email ?? '';
    accepted.set(email.split('@')[0]!, Date.now());
  };
  const fromAck: number[] = [];
  const fromAlert: number[] = [];
  let watermark = 0;
  for (let run = 0; run <= RUNS; run++) {
    const user = `u${run}x${Math.random().toString(36).slice(2, 6)}`;
    await waitFor(() => Date.now() - 1000 - GAP_MS, { until: (v) => v > watermark, what: 'the previous tick passed' });
    watermark = Date.now() - 200;
    const events = riskTravelEvents(org.id, [{ user, tripAt: Date.now() - 1000 }], watermark, GAP_MS).map(
      (r) => JSON.parse(r.value.toString()) as object,
    );
    const status = await postDelivery(issuer, inst.hookId, delivery(org.id, inst.hookId, events));
    const ackAt = Date.now();
    if (status !== 204) throw new Error(`the event hook answered ${status}`);
    const at = await waitFor(() => accepted.get(user), {
      what: `${user}'s SET`,
      seen: () => `SETs accepted for ${accepted.size} users`,
      timeoutMs: 60_000,
    });
    const alertAt = await waitFor(() => alerted.get(user), {
      what: `${user}'s alert on the topic`,
      seen: () => `alerts of ${alerted.size} users on the topic`,
      timeoutMs: 10_000,
    });
    say(
      `run ${run}${run === 0 ? ' (warm-up)' : ''}: delivery acknowledged → SET 202 ${at - ackAt} ms; alert appended → SET 202 ${at - alertAt} ms`,
    );
    if (run === 0) continue;
    fromAck.push(at - ackAt);
    fromAlert.push(at - alertAt);
  }
  const fmt = (xs: number[]) => {
    const s = summarize(xs);
    return `${s.median.toFixed(0)} ms (min ${s.min.toFixed(0)}, max ${s.max.toFixed(0)})`;
  };
  out(`finding → SET 202, median of ${RUNS} (${cpus().length} CPUs):`);
  out(`  from the finding's delivery acknowledged (204): ${fmt(fromAck)}`);
  out(`  from the alert appended to <prefix>.alerts:     ${fmt(fromAlert)}`);
  out(`  SETs accepted ${org.sets.accepted.length}, distinct ${org.sets.distinct}, refused ${org.sets.refused.length}`);
  out(
    `  load average before ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, after ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await hooklog.kill('SIGTERM');
  await stream.close();
  await org.sim.stop();
}
