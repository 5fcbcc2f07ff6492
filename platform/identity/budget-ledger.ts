/**
 * A rate budget's state in a file, shared by every process on the host that
 * spends the same token's share of the same bucket (the live poller, a
 * `hooklog backfill` beside it, the poller that restarts after a crash), so
 * the share holds across processes and restarts, not only within one.
 *
 * Each update takes a lock (a file created exclusively, holding the pid;
 * taken over when its owner no longer runs or it is older than a second:
 * no update holds it for more than a read and a rename), reads the state,
 * and replaces the file by rename, so a `kill -9` at any point leaves the
 * old state or the new one, never a torn one. No fsync: a process crash
 * keeps the page cache; a power loss forgets at most windows that have
 * ended by the time the machine is back.
 *
 * Updates are synchronous on purpose: the budget's decisions are made in
 * one step with no await between reading and claiming, and an update is a
 * few system calls (a handful per request, at most a few requests a second).
 */
import { mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { HooklogError } from '../errors.js';
import { EMPTY_BUDGET_STATE, type BudgetState, type BudgetStore } from './rate-limit.js';

const STALE_LOCK_MS = 1_000;
const LOCK_WAIT_MS = 5_000;
const pause = new Int32Array(new SharedArrayBuffer(4));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The file name for one org's bucket (org ids are slugs: letters, digits, . _ -). */
export function ledgerPath(dir: string, org: string, api: string): string {
  return join(dir, `${org}.${api}.json`);
}

export class BudgetLedger implements BudgetStore {
  readonly path: string;
  readonly #lock: string;

  constructor(path: string) {
    this.path = path;
    this.#lock = `${path}.lock`;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  }

  read(): BudgetState {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return EMPTY_BUDGET_STATE;
      throw err;
    }
    return parseState(text);
  }

  update<T>(fn: (s: BudgetState) => { state: BudgetState; result: T }): T {
    this.#take();
    try {
      const { state, result } = fn(this.read());
      const tmp = `${this.path}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(state), { mode: 0o600 });
      renameSync(tmp, this.path);
      return result;
    } finally {
      try {
        unlinkSync(this.#lock);
      } catch {
        // taken over as stale meanwhile: nothing of ours to remove
      }
    }
  }

  #take(): void {
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        writeFileSync(this.#lock, String(process.pid), { flag: 'wx', mode: 0o600 });
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      this.#breakIfStale();
      if (Date.now() > deadline) {
        throw new HooklogError(
          'IDP_UNAVAILABLE',
          `rate budget ledger ${this.path}: lock ${this.#lock} held for over ${LOCK_WAIT_MS} ms`,
          { retriable: true },
        );
      }
      Atomics.wait(pause, 0, 0, 2);
    }
  }

  #breakIfStale(): void {
    try {
      const owner = Number.parseInt(readFileSync(this.#lock, 'utf8'), 10);
      const age = Date.now() - statSync(this.#lock).mtimeMs;
      const dead = Number.isInteger(owner) && owner > 0 && owner !== process.pid && !alive(owner);
      if (dead || age > STALE_LOCK_MS) unlinkSync(this.#lock);
    } catch {
      // gone already, or being written: try again
    }
  }
}

/** A state file another version or a crash left unreadable is treated as unknown (the budget then probes once). */
function parseState(text: string): BudgetState {
  try {
    const v = JSON.parse(text) as Partial<BudgetState>;
    const w = v.window;
    const window =
      w && [w.limit, w.remaining, w.resetAtMs].every((n) => typeof n === 'number' && Number.isFinite(n)) ? w : null;
    const inFlight: Record<string, number> = {};
    for (const [k, at] of Object.entries(v.inFlight ?? {})) if (typeof at === 'number') inFlight[k] = at;
    return {
      window,
      inFlight,
      blockedUntilMs: typeof v.blockedUntilMs === 'number' ? v.blockedUntilMs : 0,
      skewMs: typeof v.skewMs === 'number' ? v.skewMs : 0,
    };
  } catch {
    return EMPTY_BUDGET_STATE;
  }
}
