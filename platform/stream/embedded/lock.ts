/**
 * One writer per log directory. Two processes appending to the same segments
 * would interleave frames and corrupt the log, so opening takes a LOCK file
 * holding the owner's pid. A lock whose pid no longer runs (the owner was
 * killed, or is a zombie waiting to be reaped) is stale and taken over. A live
 * owner is waited for (up to `waitMs`): a restart right after `kill -9` or
 * while the old process is still shutting down takes over as soon as it is
 * gone, instead of failing. Limits: a stale pid reused by an unrelated
 * process keeps the lock held (remove LOCK by hand), and two processes taking
 * over the same stale lock at the same instant are not told apart.
 */
import { readFileSync } from 'node:fs';
import { readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HooklogError } from '../../errors.js';
import type { Logger } from '../../log.js';

/** Lock paths this process holds: a second open in the same process is refused too. */
const held = new Set<string>();

export interface DirLock {
  release(): Promise<void>;
}

/** How often a waiting opener looks at the owner again. */
const RECHECK_MS = 50;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A killed process stays in the process table (state Z) until its parent reaps it: it is gone all the same.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (not Linux): trust kill(pid, 0)
  }
}

async function create(path: string): Promise<boolean> {
  try {
    await writeFile(path, `${process.pid}\n`, { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/**
 * Takes `<dir>/LOCK`, waiting up to `waitMs` (default 30 000) for a live owner
 * to exit; then throws STREAM_UNAVAILABLE naming it.
 */
export async function lockDir(dir: string, logger: Logger, waitMs = 30_000): Promise<DirLock> {
  const path = join(dir, 'LOCK');
  if (held.has(path)) {
    throw new HooklogError('STREAM_UNAVAILABLE', `embedded log ${dir} is already open in this process`);
  }
  held.add(path);
  try {
    await take(path, dir, logger, Date.now() + waitMs);
  } catch (err) {
    held.delete(path);
    throw err;
  }
  return {
    async release() {
      if (!held.delete(path)) return;
      const owner = await readFile(path, 'utf8').catch(() => '');
      if (Number.parseInt(owner, 10) === process.pid) await unlink(path).catch(() => undefined);
    },
  };
}

async function take(path: string, dir: string, logger: Logger, deadline: number): Promise<void> {
  let waiting = false;
  while (!(await create(path))) {
    const owner = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
      if (Date.now() >= deadline) {
        throw new HooklogError(
          'STREAM_UNAVAILABLE',
          `embedded log ${dir} is locked by running process ${owner} (${path})`,
        );
      }
      if (!waiting)
        logger.warn({ lock: path, owner }, 'embedded log: locked by a running process; waiting for it to exit');
      waiting = true;
      await new Promise((r) => setTimeout(r, RECHECK_MS));
      continue;
    }
    logger.warn({ lock: path, owner }, 'embedded log: taking over a stale lock');
    await unlink(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    if (!(await create(path)))
      throw new HooklogError('STREAM_UNAVAILABLE', `embedded log ${dir}: another process took the lock ${path}`);
    return;
  }
}
