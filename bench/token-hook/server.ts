/**
 * The process under load (spawned by run.ts, one per mode and run, on
 * 127.0.0.1 only):
 *   hooklog   the real Koa app (receivers/app.ts) with the token hook started
 *             from config — 20 rules, the 10 000-row lookup table, header
 *             secret auth, audit trail on into the embedded stream (fsync);
 *   baseline  a bare node:http handler that drains the body and answers the
 *             very bytes hooklog answers for the bench request (computed once
 *             at start by the same rules, off the measured path);
 *   no-audit  hooklog without the audit trail (what the audit path costs is hooklog minus this);
 *   decide    a bare node:http handler that reads the body and answers what `decide` (the rules, the
 *             lookups, the answer's JSON) makes of it, no audit: what remains per request besides the
 *             decision is hooklog minus this.
 * Runs as the bundle run.ts makes of it (cli/build.ts `bundle`, as the CLI is built), not through tsx; so it reads
 * nothing beside its sources (the fixture request comes as `--request <file>`, written by run.ts).
 * Prints `READY <port>` when listening; answers `cpu` IPC messages with its
 * CPU time so far (µs), so run.ts can give CPU per request. `--audit off`
 * runs hooklog without the audit trail, to isolate its cost by hand;
 * `--risk on` adds the risk rules and 10 000 users' states (workload.ts); `--stall-trace on` splits each
 * event-loop stall over 5 ms into time on a CPU, waiting for one, and blocked (stall-trace.ts).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { parseConfig } from '../../cli/config/load.js';
import { createLogger } from '../../platform/log.js';
import { ensureHooklogTopics, openStream } from '../../platform/stream/open.js';
import { createApp } from '../../cli/app.js';
import { decide, startTokenHooks } from '../../receivers/token-hook/index.js';
import { BENCH_ORG, benchHook, requestUser, riskRecords } from './workload.js';
import { riskTopics } from '../../schemas/risk.js';
import type { ServerSample } from './sample.js';
import { formatStall, traceStalls } from './stall-trace.js';

const { values: args } = parseArgs({
  options: {
    mode: { type: 'string' },
    dir: { type: 'string' },
    table: { type: 'string' },
    request: { type: 'string' },
    audit: { type: 'string', default: 'on' },
    risk: { type: 'string', default: 'off' },
    'stall-trace': { type: 'string', default: 'off' },
  },
  strict: true,
});
const SERVER_MODES = ['baseline', 'hooklog', 'no-audit', 'decide'];
if (!SERVER_MODES.includes(args.mode ?? '') || !args.dir || !args.table || !args.request)
  throw new Error(
    `usage: server.ts --mode ${SERVER_MODES.join('|')} --dir <data dir> --table <csv> --request <json file> [--audit off] [--risk on] [--stall-trace on]`,
  );
const request = readFileSync(args.request);

const logger = createLogger({ level: 'warn', destination: process.stderr });
// The audit trail is part of what hooklog does per answer; `--audit off` isolates its cost.
const audit = args.mode === 'hooklog' && args.audit !== 'off';
const app = args.mode === 'hooklog' || args.mode === 'no-audit';
const config = parseConfig(
  {
    data_dir: args.dir,
    server: { host: '127.0.0.1', port: 0 },
    stream: { topic_prefix: `bench-${process.pid}`, partitions: 2 },
    token_hooks: [{ ...benchHook(args.table, args.risk === 'on'), audit: { enabled: audit } }],
  },
  {},
);
const stream = await openStream(config, logger);
const topics = await ensureHooklogTopics(stream, config);
const riskTopic = riskTopics(config.stream.topic_prefix).state;
// `--risk on`: the users' states are on the stream before the hooks start, as the fold would have left them.
if (args.risk === 'on') await stream.append(riskTopic, riskRecords(BENCH_ORG, requestUser(request)));
const hooks = await startTokenHooks({
  hooks: config.token_hooks,
  stream,
  topic: topics.tokenDecisions,
  spoolDir: join(args.dir, 'token-hook-audit'),
  logger,
  riskTopic,
});

let handler: Parameters<typeof createServer>[1];
if (app) {
  handler = createApp({ config, stream, topics, probes: [], logger, tokenHooks: hooks }).callback();
} else if (args.mode === 'decide') {
  const hook = hooks.get('bench')!;
  handler = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = decide(hook, Buffer.concat(chunks), undefined);
      const body = answer.status === 200 ? answer.body : '';
      res.writeHead(answer.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  };
} else {
  const answer = decide(hooks.get('bench')!, request, 'baseline');
  if (answer.status !== 200) throw new Error(`bench request answered ${answer.status}, expected 200 with commands`);
  const body = Buffer.from(answer.body);
  await hooks.stop();
  handler = (req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    });
  };
}

const server = createServer({ keepAliveTimeout: 30_000 }, handler);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
// Where a slow slice comes from: the largest event-loop stall and GC pause since the last ask, and GC time in all.
// A request that waited 30 ms beside a 30 ms stall and a 1 ms pause was held up by synchronous work, not by GC.
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
let gcMs = 0;
let gcMaxMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcMs += e.duration;
    gcMaxMs = Math.max(gcMaxMs, e.duration);
  }
}).observe({ entryTypes: ['gc'] });
// `--stall-trace on`: each stall over 5 ms split into on CPU (synchronous work), waiting for a CPU (the machine) and
// blocked (a synchronous system call), on stderr; costs a procfs read per ms, so the run's figures are not results.
if (args['stall-trace'] === 'on') traceStalls(5, (s) => process.stderr.write(`${formatStall(args.mode!, s)}\n`));
process.on('message', (msg) => {
  if (msg === 'cpu') {
    const u = process.cpuUsage();
    const sample: ServerSample = { cpuUs: u.user + u.system, gcMs, gcMaxMs, stallMaxMs: loopDelay.max / 1e6 };
    gcMaxMs = 0;
    loopDelay.reset();
    process.send?.(sample);
  }
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void (async () => {
    if (args.mode !== 'baseline') await hooks.stop();
    await stream.close();
    process.exit(0);
  })();
});
process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`);
