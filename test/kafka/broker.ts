/**
 * A real, single-node Apache Kafka (KRaft, broker+controller in one JVM) for the
 * integration tests, on two free loopback ports. `restart()` stops the JVM and
 * starts it again on the same ports and data, which is what "the broker went
 * away in the middle of a stream" looks like to a client.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  mkdtempSync,
  openSync,
  closeSync,
  existsSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  mkdirSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quietKafka } from '../../platform/stream/kafka/client.js';
import { checkJava, ensureKafkaLibs } from './libs.js';

export interface KafkaBroker {
  /** Bootstrap address, `127.0.0.1:<port>`. */
  readonly brokers: string;
  readonly dataDir: string;
  /** Stops the broker (SIGTERM, SIGKILL after a deadline) and removes a data dir it created. */
  stop(): Promise<void>;
  /**
   * Stops the broker and starts it again on the same ports and data dir; resolves once it serves again.
   * `whileDown` runs after the JVM has exited and before it is launched again, so a test can act during an
   * outage of its own length instead of racing a restart whose duration depends on the machine.
   */
  restart(opts?: { whileDown?: () => Promise<void> }): Promise<void>;
}

export interface StartKafkaBrokerOptions {
  /** Keep the broker's data here; default a fresh temp dir, removed by `stop()`. */
  dataDir?: string;
  /** How long to wait for the broker to serve requests. Default 60 s. */
  startTimeoutMs?: number;
  /**
   * Server properties set over the test defaults, e.g. `{ 'group.initial.rebalance.delay.ms': '3000' }` for a
   * broker's own default (the tests' is 0).
   */
  serverProperties?: Readonly<Record<string, string>>;
  /**
   * `test` (default): the JVM starts fast (the client JIT only, a class-data archive), which is what a test
   * waits on. `server`: the JVM as Kafka ships it (full JIT), for benches, whose figures must not depend on a
   * start-up shortcut that costs CPU per request later.
   */
  jvm?: 'test' | 'server';
}

const STOP_GRACE_MS = 20_000;

/**
 * Ports below the kernel's ephemeral range: a port picked inside it can be taken
 * by some client's outgoing connection in the second before the JVM binds it.
 */
function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

async function freePorts(n: number): Promise<number[]> {
  const high = Math.max(12_000, ephemeralLow() - 1);
  const ports: number[] = [];
  while (ports.length < n) {
    const port = 10_000 + Math.floor(Math.random() * (high - 10_000));
    if (!ports.includes(port) && (await bindable(port))) ports.push(port);
  }
  return ports;
}

function serverProperties(
  dataDir: string,
  port: number,
  controllerPort: number,
  overrides: Readonly<Record<string, string>> = {},
): string {
  const lines = [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    `log.dirs=${join(dataDir, 'logs')}`,
    'num.partitions=1',
    // One node: internal topics cannot have more replicas; few partitions keep start-up quick.
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=4',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=4',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    // The cleaner's default 128 MiB dedupe buffer would take a quarter of the heap for nothing.
    'log.cleaner.dedupe.buffer.size=8388608',
  ];
  const kept = lines.filter((l) => !(l.split('=')[0]! in overrides));
  return [...kept, ...Object.entries(overrides).map(([k, v]) => `${k}=${v}`), ''].join('\n');
}

const LOG4J = (logFile: string) =>
  [
    'log4j.rootLogger=WARN, file',
    'log4j.appender.file=org.apache.log4j.FileAppender',
    `log4j.appender.file.File=${logFile}`,
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    'log4j.logger.kafka.server.KafkaServer=INFO',
    'log4j.logger.kafka.server.BrokerServer=INFO',
    '',
  ].join('\n');

function tail(file: string, lines = 30): string {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : '(no log)';
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** True once a Kafka client can describe the cluster at `brokers`. */
export async function brokerAnswers(brokers: string, timeoutMs = 5_000): Promise<boolean> {
  const admin = quietKafka({
    clientId: 'hooklog-test-probe',
    brokers: brokers.split(','),
    connectionTimeout: Math.min(timeoutMs, 3_000),
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * JVM start-up is most of a broker's start, which a test file that restarts its own broker pays several
 * times: the JVMs run with the client JIT only (C1: it serves test loads, and spares a 2-core machine the
 * C2 compiler's CPU), and with a class-data-sharing archive of Kafka's classes, made by the first broker
 * that stops normally (-XX:ArchiveClassesAtExit) and kept beside the jars, named by the JVM that made it.
 * A JVM that cannot use the archive (another build, a changed classpath) starts without it.
 */
function startupFlags(
  libs: string,
  javaVersion: string,
): { flags: (broker: boolean) => string[]; stopped: (normally: boolean) => void } {
  const archive = join(libs, `.cds-${createHash('sha256').update(javaVersion).digest('hex').slice(0, 16)}.jsa`);
  // Written at the broker's exit under a name of its own, then renamed once it exited normally: a broker killed
  // while writing leaves no half archive, and brokers stopping side by side each rename a whole one.
  const staging = `${archive}.${process.pid}-${randomBytes(4).toString('hex')}`;
  let dumping = false;
  return {
    flags: (broker) => {
      if (broker) dumping = false;
      if (existsSync(archive)) return ['-XX:TieredStopAtLevel=1', `-XX:SharedArchiveFile=${archive}`];
      if (!broker) return ['-XX:TieredStopAtLevel=1'];
      dumping = true;
      return ['-XX:TieredStopAtLevel=1', `-XX:ArchiveClassesAtExit=${staging}`];
    },
    stopped: (normally: boolean) => {
      if (!dumping) return;
      try {
        if (normally && statSync(staging).size > 0) renameSync(staging, archive);
      } catch {
        // no archive this time (the JVM was killed, or could not write one); the next broker tries again
      }
      rmSync(staging, { force: true });
    },
  };
}

export async function startKafkaBroker(opts: StartKafkaBrokerOptions = {}): Promise<KafkaBroker> {
  const javaVersion = await checkJava();
  const libs = await ensureKafkaLibs();
  const startup =
    opts.jvm === 'server' ? { flags: () => [] as string[], stopped: () => undefined } : startupFlags(libs, javaVersion);
  const ownDir = !opts.dataDir;
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'hooklog-kafka-'));
  mkdirSync(dataDir, { recursive: true });
  let port = 0;
  const props = join(dataDir, 'server.properties');
  const log4j = join(dataDir, 'log4j.properties');
  const logFile = join(dataDir, 'broker.log');
  const outFile = join(dataDir, 'broker.out');
  writeFileSync(log4j, LOG4J(logFile));
  const classpath = join(libs, '*');
  const jvm = [`-Dlog4j.configuration=file:${log4j}`, '-Djava.awt.headless=true', '-cp', classpath];
  const startTimeoutMs = opts.startTimeoutMs ?? 60_000;

  async function format(): Promise<void> {
    if (existsSync(join(dataDir, 'logs', 'meta.properties'))) return;
    // KRaft needs its storage formatted with a cluster id: 22 chars of base64url, as Kafka makes them,
    // and like Kafka's own never starting with '-', which the tool's argument parser would take for a flag.
    let clusterId = randomBytes(16).toString('base64url');
    while (clusterId.startsWith('-')) clusterId = randomBytes(16).toString('base64url');
    await new Promise<void>((resolve, reject) => {
      execFile(
        'java',
        [...startup.flags(false), ...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', props],
        { timeout: 120_000 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`formatting Kafka storage failed: ${err.message}\n${stdout}${stderr}`)) : resolve(),
      );
    });
  }

  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  const killOnExit = () => child?.kill('SIGKILL');
  process.once('exit', killOnExit);

  async function launch(): Promise<void> {
    const out = openSync(outFile, 'a');
    const brokers = `127.0.0.1:${port}`;
    const flags = startup.flags(true);
    const proc = spawn('java', ['-Xmx512m', '-Xms128m', '-XX:+UseSerialGC', ...flags, ...jvm, 'kafka.Kafka', props], {
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    child = proc;
    let gone = false;
    exited = new Promise((resolve) =>
      proc.once('exit', () => {
        gone = true;
        resolve();
      }),
    );
    const deadline = Date.now() + startTimeoutMs;
    for (;;) {
      if (gone)
        throw new Error(
          `the Kafka broker exited during start-up; ${outFile}:\n${tail(outFile)}\n${logFile}:\n${tail(logFile)}`,
        );
      if ((await portOpen(port)) && (await brokerAnswers(brokers, 3_000))) return;
      if (Date.now() > deadline) {
        await halt();
        throw new Error(
          `the Kafka broker did not serve on ${brokers} within ${startTimeoutMs} ms; ${logFile}:\n${tail(logFile)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async function halt(): Promise<void> {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
    // Killed (past the grace period), it may have been writing the archive.
    startup.stopped(proc.signalCode !== 'SIGKILL');
  }

  // A port found free can still be taken before the JVM binds it: then start again on other ports.
  for (let attempt = 1; ; attempt++) {
    try {
      const [p, controllerPort] = (await freePorts(2)) as [number, number];
      port = p;
      writeFileSync(props, serverProperties(dataDir, port, controllerPort, opts.serverProperties));
      await format();
      writeFileSync(outFile, '');
      writeFileSync(logFile, '');
      await launch();
      break;
    } catch (err) {
      const bindFailed = /Address already in use/.test(`${tail(outFile, 200)}${tail(logFile, 200)}`);
      if (bindFailed && attempt < 3) continue;
      await halt();
      process.removeListener('exit', killOnExit);
      if (ownDir) rmSync(dataDir, { recursive: true, force: true }); // the error carries the logs' tails
      throw err;
    }
  }
  return {
    brokers: `127.0.0.1:${port}`,
    dataDir,
    async restart(how = {}) {
      await halt();
      await how.whileDown?.();
      await launch();
    },
    async stop() {
      await halt();
      process.removeListener('exit', killOnExit);
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
