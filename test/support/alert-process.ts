/**
 * A `hooklog alert` process (the real CLI), for the kill -9 tests of the alerting consumer: its output kept, its
 * exit awaitable, so a test can kill it mid-stream and start the next; and the embedded kill -9 run those tests share.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { alertingSchema } from '../../consumers/alerting/config.js';
import { alertingTopics, startAlerting } from '../../consumers/alerting/index.js';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { hooklogArgs, REPO_DIR } from './cli.js';
import { randomName, waitFor } from './wait.js';

export interface AlertProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
}

export function spawnAlert(configPath: string): AlertProcess {
  const child = spawn(process.execPath, hooklogArgs(['alert', '-c', configPath]), {
    cwd: REPO_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, exited, output: () => out };
}

/** What `killThriceThenDrain` saw: the commits when the last kill had left them, and every alert id on the topic. */
export interface KilledRun {
  /** Records of the logs topic the group had committed after the third kill (0 < it < all: kills mid-stream). */
  readonly atRestart: number;
  /** The alert id of every record on the alerts topic, repeats included. */
  readonly alertIds: string[];
}

/**
 * The embedded kill -9 run of a stateful rule kind: `records` on the logs topic, a `hooklog alert` process killed
 * with SIGKILL three times once it has raised alerts four times, then the consumer run in this process until the
 * group has committed every record, and the alerts topic read to its end (a crash repeats a delivery, never a
 * decision: a repeat would be on it).
 */
export async function killThriceThenDrain(o: {
  readonly configPath: string;
  readonly dataDir: string;
  readonly prefix: string;
  readonly alerting: unknown;
  readonly records: readonly StreamRecord[];
}): Promise<KilledRun> {
  const log = silentLogger();
  const t = topicNames(o.prefix);
  const config = alertingSchema.parse(o.alerting);
  let local = await openEmbeddedStream({ dataDir: o.dataDir, logger: log });
  await local.ensureTopics([
    { name: t.logs, partitions: 3 },
    { name: t.deadletter, partitions: 1 },
  ]);
  for (let i = 0; i < o.records.length; i += 500) await local.append(t.logs, o.records.slice(i, i + 500));
  await local.close();

  for (let k = 0; k < 3; k++) {
    const proc = spawnAlert(o.configPath);
    await waitFor(() => (proc.output().match(/alerts raised/g) ?? []).length, {
      until: (n) => n >= 4,
      timeoutMs: 60_000,
      intervalMs: 5,
      what: 'progress',
      seen: () => proc.output(),
    });
    proc.child.kill('SIGKILL');
    await proc.exited;
  }

  local = await openEmbeddedStream({ dataDir: o.dataDir, logger: log });
  try {
    const committed = async () =>
      [...(await local.committedOffsets(t.logs, config.group)).values()].reduce((a, b) => a + b, 0);
    const atRestart = await committed();
    const alerting = await startAlerting({
      config,
      stream: local,
      topicPrefix: o.prefix,
      partitions: 3,
      logsTopic: t.logs,
      deadletterTopic: t.deadletter,
      logger: log,
    });
    try {
      await waitFor(async () => await committed(), { until: (v) => v === o.records.length, what: 'drained' });
    } finally {
      await alerting.stop();
    }
    const alertIds: string[] = [];
    const alertsTopic = alertingTopics(o.prefix).alerts;
    const end = local.endOffsets(alertsTopic);
    const readerGroup = randomName('reader');
    const reader = await local.consume({
      topic: alertsTopic,
      group: readerGroup,
      maxBatchWaitMs: 20,
      handler: async (b) => void alertIds.push(...b.records.map((r) => r.headers['hooklog-alert-id']!)),
    });
    try {
      await waitFor(
        async () => {
          const c = await local.committedOffsets(alertsTopic, readerGroup);
          return [...end].map(([p, next]) => ({ partition: p, next, committed: c.get(p) ?? 0 }));
        },
        {
          until: (parts) => parts.every((x) => x.committed >= x.next),
          what: 'reading the alerts',
          seen: () => `${alertIds.length} alerts read`,
        },
      );
    } finally {
      await reader.stop();
    }
    return { atRestart, alertIds };
  } finally {
    await local.close();
  }
}
