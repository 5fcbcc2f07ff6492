import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { waitFor } from './wait.js';

export const REPO_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MAIN = join(REPO_DIR, 'cli', 'hooklog.ts');
const BUILT = join(REPO_DIR, 'bin', 'hooklog.js');

/**
 * Runs the hooklog CLI as a separate process, as a user would: from source through tsx (no build step), or,
 * with HOOKLOG_CLI=built, the compiled CLI that `npm start` runs. Benches use the latter (after
 * `npm run build`), so tsx's transpiler is not in their memory and CPU figures.
 */
export function hooklogArgs(args: readonly string[], built = process.env.HOOKLOG_CLI === 'built'): string[] {
  return built ? [BUILT, ...args] : ['--import', 'tsx', MAIN, ...args];
}

/** How to run the CLI: from source (default), or built (`node bin/hooklog.js`, what users run). */
export interface CliOptions {
  readonly built?: boolean;
  /** The working directory of `hooklog start` (default: the repository), where relative paths of its config lead. */
  readonly cwd?: string;
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  cwd = REPO_DIR,
  o: CliOptions = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, hooklogArgs(args, o.built), {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface Daemon {
  readonly child: ChildProcess;
  readonly output: () => string;
  /** The base URL printed at start. */
  readonly url: string;
}

/** Starts `hooklog start` and waits until it prints that it listens; returns its URL. */
export async function startDaemon(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 60_000,
  o: CliOptions = {},
): Promise<Daemon> {
  const child = spawn(process.execPath, hooklogArgs(['start', ...args], o.built), {
    cwd: o.cwd ?? REPO_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // A process that exits while starting fails the wait at once, with its output.
  const exited = new Promise<never>((_, fail) =>
    child.once('exit', (code, signal) => fail(new Error(`hooklog exited with ${code ?? signal}:\n${out}`))),
  );
  exited.catch(() => undefined);
  const url = await Promise.race([
    waitFor(() => /"url":"(http[^"]+)"/.exec(out)?.[1], {
      timeoutMs,
      what: 'hooklog to start',
      seen: () => `its output: ${out.slice(-1500)}`,
    }),
    exited,
  ]);
  return { child, output: () => out, url };
}

export async function stopDaemon(d: Daemon, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (d.child.exitCode !== null || d.child.signalCode !== null) return;
  const exited = new Promise<void>((r) => d.child.once('exit', () => r()));
  d.child.kill(signal);
  await exited;
}
