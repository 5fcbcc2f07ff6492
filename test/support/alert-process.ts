/**
 * A `hooklog alert` process (the real CLI), for the kill -9 tests of the alerting consumer: its output kept, its
 * exit awaitable, so a test can kill it mid-stream and start the next.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { hooklogArgs, REPO_DIR } from './cli.js';

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
