/**
 * One writer per log directory. Two processes appending to the same segments
 * would interleave frames and corrupt the log, so opening takes a LOCK file
 * holding the owner's pid. A lock whose pid no longer runs (the owner was
 * killed) is stale and taken over. Limits: a stale pid reused by an unrelated
 * process keeps the lock held (remove LOCK by hand), and two processes taking
 * over the same stale lock at the same instant are not told apart.
 */
import { readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HooklogError } from '../../errors.js';
import type { Logger } from '../../log.js';

/** Lock paths this process holds: a second open in the same process is refused too. */
const held = new Set<string>();

export interface DirLock {
  release(): Promise<void>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
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

/** Takes `<dir>/LOCK`, or throws STREAM_UNAVAILABLE naming the live owner. */
export async function lockDir(dir: string, logger: Logger): Promise<DirLock> {
  const path = join(dir, 'LOCK');
  if (held.has(path)) {
    throw new HooklogError('STREAM_UNAVAILABLE', `embedded log ${dir} is already open in this process`);
  }
  held.add(path);
  try {
    await take(path, dir, logger);
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

async function take(path: string, dir: string, logger: Logger): Promise<void> {
  if (!(await create(path))) {
    const owner = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
      throw new HooklogError('STREAM_UNAVAILABLE', `embedded log ${dir} is locked by running process ${owner} (${path})`);
    }
    logger.warn({ lock: path, owner }, 'embedded log: taking over a stale lock');
    await unlink(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    if (!(await create(path))) throw new HooklogError('STREAM_UNAVAILABLE', `embedded log ${dir}: another process took the lock ${path}`);
  }
}
