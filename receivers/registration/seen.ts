/**
 * The hooks the watch has seen registered, remembered in a small JSON file
 * under `data_dir` across restarts. A hook never seen registered has not been
 * applied yet (a new deployment, a hook just given `register:`): its absence
 * is no drift, and alerting on it would greet every new deployment with an
 * alert. One seen registered once and gone since is a finding.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { errorMessage } from '../../platform/errors.js';
import type { Logger } from '../../platform/log.js';

export class SeenHooks {
  readonly #path: string | null;
  readonly #keys: Set<string>;
  readonly #logger: Logger;

  /** `path`: the file (none: remembered for the life of the process only). */
  constructor(path: string | null, logger: Logger) {
    this.#path = path;
    this.#logger = logger;
    this.#keys = new Set(path ? readKeys(path, logger) : []);
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  /** Remembers a hook seen registered; written at once (rarely: once per hook). */
  add(key: string): void {
    if (this.#keys.has(key)) return;
    this.#keys.add(key);
    if (!this.#path) return;
    try {
      mkdirSync(dirname(this.#path), { recursive: true });
      const tmp = `${this.#path}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify({ version: 1, seen: [...this.#keys].sort() }), { mode: 0o600 });
      renameSync(tmp, this.#path);
    } catch (err) {
      // Kept in memory: only a restart before the next write forgets it (its absence then goes unreported).
      this.#logger.warn({ err: errorMessage(err), path: this.#path }, 'hook_watch_state_not_saved');
    }
  }
}

function readKeys(path: string, logger: Logger): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return []; // none yet
  }
  try {
    const parsed = JSON.parse(text) as { seen?: unknown };
    if (Array.isArray(parsed.seen)) return parsed.seen.filter((k): k is string => typeof k === 'string');
  } catch {
    // fall through: an unreadable file is started afresh, said once
  }
  logger.warn({ path }, 'hook_watch_state_unreadable');
  return [];
}
