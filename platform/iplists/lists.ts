/**
 * Named lists of IP ranges read from files (the `enrichment.ip_lists` config), which the filter language
 * tests with `client.ipAddress in list("anonymizers")`. A file holds one CIDR range or single address a
 * line (IPv4 or IPv6); `#` starts a comment; blank lines are skipped. Membership is node:net's BlockList
 * (built in, kept by Node), which also matches an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) against
 * IPv4 ranges.
 *
 * A file is re-read when its modification time or size changes (polled: fs.watch misses replacements by
 * rename on some file systems, and editors and config management replace files that way). A file that no
 * longer reads or parses keeps the last good list: a typo in one line must not turn a detection off; the
 * failure is logged and counted (`reloadErrors`, the metric the caller exports).
 *
 * It lives on the ground floor because the filter language (platform/filter/) names lists, and both
 * alerting and search may test them.
 */
import { BlockList, isIP } from 'node:net';
import { readFileSync, statSync } from 'node:fs';
import { z } from 'zod';
import { HooklogError } from '../errors.js';
import { geoipSchema } from '../enrichment/geoip.js';

/** Line count and size bounds: a list is configuration, not a data set; a runaway file is refused, not read. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

const listName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 of letters, digits, . _ - (not starting with . _ -)');

export const ipListsSchema = z
  .strictObject({
    ip_lists: z
      .array(
        z.strictObject({
          name: listName.describe('The name rules use: `client.ipAddress in list("<name>")`.'),
          path: z
            .string()
            .min(1)
            .describe('File with one CIDR range or address a line (IPv4 or IPv6); `#` starts a comment.'),
        }),
      )
      .default([])
      .refine((l) => new Set(l.map((x) => x.name)).size === l.length, 'list names must be unique')
      .describe(
        'Named IP lists (anonymisers, cloud ranges, your offices) that rules test with `in list("name")`. A file is re-read when it changes; a file that fails to read or parse keeps the last good list.',
      ),
    reload_interval_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(5000)
      .describe('How often the ip_lists and geoip files are checked for changes (modification time and size).'),
    geoip: geoipSchema,
  })
  .prefault({})
  .describe('Context added to events before rules see them.');

export type IpListsConfig = z.output<typeof ipListsSchema>;

/** What a filter needs of the lists: which names exist, and whether an address is in one. */
export interface IpListLookup {
  has(name: string): boolean;
  names(): readonly string[];
  /** False for a value that is not an IP address (a name, garbage, a non-string). */
  contains(name: string, address: unknown): boolean;
}

/** One list file's text → its ranges; throws HooklogError CONFIG_INVALID naming the first bad line. */
export function parseIpList(text: string, source: string): BlockList {
  const b = new BlockList();
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.replace(/#.*/, '').trim();
    if (line === '') continue;
    const bad = () =>
      new HooklogError(
        'CONFIG_INVALID',
        `${source}:${n + 1}: not an IP address or CIDR range: ${JSON.stringify(line.slice(0, 80))}`,
      );
    const slash = line.indexOf('/');
    const addr = slash < 0 ? line : line.slice(0, slash);
    const v = isIP(addr);
    if (v === 0) throw bad();
    const type = v === 4 ? 'ipv4' : 'ipv6';
    if (slash < 0) {
      b.addAddress(addr, type);
      continue;
    }
    const bits = line.slice(slash + 1);
    const max = v === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) throw bad();
    b.addSubnet(addr, Number(bits), type);
  }
  return b;
}

/** Lists given in place (a case's `lists:`, tests): address and range strings by name. */
export function staticIpLists(lists: Readonly<Record<string, readonly string[]>>, over?: IpListLookup): IpListLookup {
  const own = new Map(Object.entries(lists).map(([k, v]) => [k, parseIpList(v.join('\n'), `list ${k}`)]));
  return {
    has: (name) => own.has(name) || (over?.has(name) ?? false),
    names: () => [...new Set([...own.keys(), ...(over?.names() ?? [])])],
    contains: (name, address) => {
      const b = own.get(name);
      return b ? check(b, address) : (over?.contains(name, address) ?? false);
    },
  };
}

function check(b: BlockList, address: unknown): boolean {
  if (typeof address !== 'string') return false;
  const v = isIP(address);
  if (v === 0) return false;
  return b.check(address, v === 4 ? 'ipv4' : 'ipv6');
}

interface Loaded {
  list: BlockList;
  mtimeMs: number;
  size: number;
}

export interface IpListsOptions {
  /** Called for a file that fails to reload (the last good list stays). */
  readonly onError?: (name: string, err: Error) => void;
  readonly onReload?: (name: string) => void;
}

/**
 * The configured lists, read at construction (a list that does not load then fails the boot: there is no
 * last good list yet) and re-read on change once `start()`ed.
 */
export class IpLists implements IpListLookup {
  readonly #files: ReadonlyArray<{ name: string; path: string }>;
  readonly #loaded = new Map<string, Loaded>();
  readonly #intervalMs: number;
  readonly #opts: IpListsOptions;
  #timer: NodeJS.Timeout | undefined;
  /** Reloads that failed, by list, since start (the last good list was kept). */
  readonly reloadErrors = new Map<string, number>();

  constructor(config: Pick<IpListsConfig, 'ip_lists' | 'reload_interval_ms'>, opts: IpListsOptions = {}) {
    this.#files = config.ip_lists;
    this.#intervalMs = config.reload_interval_ms;
    this.#opts = opts;
    for (const f of this.#files) this.#loaded.set(f.name, read(f.path, f.name));
  }

  has(name: string): boolean {
    return this.#loaded.has(name);
  }

  names(): readonly string[] {
    return [...this.#loaded.keys()];
  }

  contains(name: string, address: unknown): boolean {
    const l = this.#loaded.get(name);
    return l ? check(l.list, address) : false;
  }

  /** Checks every file once: re-reads the changed ones. */
  refresh(): void {
    for (const f of this.#files) {
      const cur = this.#loaded.get(f.name)!;
      let st;
      try {
        st = statSync(f.path);
      } catch (err) {
        this.#failed(f.name, err as Error, cur);
        continue;
      }
      if (st.mtimeMs === cur.mtimeMs && st.size === cur.size) continue;
      try {
        this.#loaded.set(f.name, read(f.path, f.name));
        this.#opts.onReload?.(f.name);
      } catch (err) {
        // Remember the stamp, so one bad version is reported once, not at every poll.
        this.#failed(f.name, err as Error, cur, st);
      }
    }
  }

  #failed(name: string, err: Error, cur: Loaded, st?: { mtimeMs: number; size: number }): void {
    if (st && st.mtimeMs === cur.mtimeMs && st.size === cur.size) return;
    if (st) this.#loaded.set(name, { ...cur, mtimeMs: st.mtimeMs, size: st.size });
    else if (cur.mtimeMs === -1) return;
    else this.#loaded.set(name, { ...cur, mtimeMs: -1, size: -1 });
    this.reloadErrors.set(name, (this.reloadErrors.get(name) ?? 0) + 1);
    this.#opts.onError?.(name, err);
  }

  start(): void {
    if (this.#timer || this.#files.length === 0) return;
    this.#timer = setInterval(() => this.refresh(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

function read(path: string, name: string): Loaded {
  let st;
  let text;
  try {
    st = statSync(path);
    if (st.size > MAX_FILE_BYTES)
      throw new HooklogError('CONFIG_INVALID', `${path}: larger than ${MAX_FILE_BYTES} bytes`);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof HooklogError) throw err;
    throw new HooklogError('CONFIG_INVALID', `ip list ${name}: cannot read ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return { list: parseIpList(text, path), mtimeMs: st.mtimeMs, size: st.size };
}
