/**
 * Several `hooklog start` processes (the real CLI) for fleet tests: spawned
 * with their own arguments and environment, their output kept, their HTTP
 * address read from the `http listening` line (printed before the consumer
 * groups are joined, so a test can reach the receivers while those settle).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { logEvent } from '../simulated-org/generate.js';
import { hooklogArgs, REPO_DIR } from './cli.js';
import { waitFor } from './wait.js';

export interface Instance {
  readonly name: string;
  readonly child: ChildProcess;
  output(): string;
  /** JSON log lines printed so far. */
  lines(): Array<Record<string, unknown>>;
  /** Resolves with the receivers' base URL once HTTP listens. */
  address(timeoutMs?: number): Promise<string>;
  /** Resolves once every component of its roles has started. */
  started(timeoutMs?: number): Promise<void>;
  running(): boolean;
  /** Sends a signal and waits for the process to exit (SIGKILL, SIGTERM). */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * `bin`: another build's `bin/hooklog.js` to run instead of this one (the previous release, previous-release.ts);
 * `built`: this tree's build rather than the source through tsx (default: HOOKLOG_CLI).
 */
export function spawnHooklog(
  name: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  o: { bin?: string; built?: boolean } = {},
): Instance {
  const argv = o.bin ? [o.bin, 'start', ...args] : hooklogArgs(['start', ...args], o.built);
  const child = spawn(process.execPath, argv, {
    cwd: REPO_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const lines = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      });
  const died = exited.then(() => {
    throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}):\n${out.slice(-4000)}`);
  });
  died.catch(() => undefined);
  /** Waits for `probe`, failing at once if the process exits meanwhile. */
  const until = <T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<NonNullable<T>> =>
    Promise.race([waitFor(probe, { timeoutMs, what, seen: () => `its output: ${out.slice(-1500)}` }), died]);
  return {
    name,
    child,
    output: () => out,
    lines,
    running,
    address: (timeoutMs = 60_000) =>
      until(() => /"address":"(http[^"]+)"/.exec(out)?.[1], timeoutMs, `${name} to listen`),
    started: async (timeoutMs = 60_000) =>
      void (await until(() => out.includes('"msg":"hooklog started"') || undefined, timeoutMs, `${name} to start`)),
    kill: async (signal) => {
      if (running()) child.kill(signal);
      await exited;
    },
  };
}

/** A copy of a config file with its own data_dir (embedded ClickHouse admits one process per directory). */
export function withOwnDataDir(configPath: string, name: string): string {
  const config = parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
  const path = join(dirname(configPath), `${name}.yaml`);
  writeFileSync(path, stringify({ ...config, data_dir: join(dirname(configPath), `data-${name}`) }));
  return path;
}

/** A valid LogEvent for a hook delivery: fresh uuid, published now. */
export function hookEvent(i: number): Record<string, unknown> & { uuid: string } {
  return { ...logEvent(i), uuid: randomUUID(), published: new Date().toISOString() } as Record<string, unknown> & {
    uuid: string;
  };
}
