/**
 * GeoIP databases the user supplies (`enrichment.geoip.city`, `.asn`): MaxMind DB files (MMDB) of MaxMind's
 * GeoLite2/GeoIP2 City, Country or ASN, or DB-IP's lite City, Country and ASN (the same format and record
 * layout), read with mmdb-lib (the maintained reader under the `maxmind` package, without its cache and
 * file watching: hooklog reloads as it does its IP lists).
 *
 * A file is re-read when its modification time or size changes (polled, as platform/iplists/lists.ts polls, for
 * the same reason: a download script replaces the file by rename). A file that no longer reads, is no MMDB or is
 * of the wrong kind keeps the last good database: a broken download must not turn the enrichment off; the
 * failure is logged and counted. At start there is no last good database, so the same faults are a CONFIG error.
 */
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { Reader, type Response } from 'mmdb-lib';
import { z } from 'zod';
import { HooklogError } from '../errors.js';
import type { Enrichment, GeoLookup } from './enrichment.js';

/** GeoLite2-City is ~70 MB; a file far past that is no GeoIP database. */
const MAX_FILE_BYTES = 1024 * 1024 * 1024;

export const geoipSchema = z
  .strictObject({
    city: z
      .string()
      .min(1)
      .optional()
      .describe(
        'MMDB file of a City or Country database (MaxMind GeoLite2/GeoIP2, DB-IP lite): country, city and coordinates of the events that do not locate their address themselves.',
      ),
    asn: z
      .string()
      .min(1)
      .optional()
      .describe(
        'MMDB file of an ASN database (MaxMind GeoLite2-ASN, DB-IP ASN lite): AS number and organisation of the events that do not name theirs.',
      ),
  })
  .prefault({})
  .describe(
    'GeoIP enrichment from MMDB files you supply, looked up once per event when it is appended and kept in the events table (`enrichment_*` columns) and for rules (`enrichment.geo.*`, `enrichment.asn.*`). Files are re-read when they change (every reload_interval_ms); one that fails keeps the last good database.',
  );

export type GeoipConfig = z.output<typeof geoipSchema>;

export type GeoDatabase = keyof GeoipConfig;

/** Which `database_type`s each setting takes (MaxMind's and DB-IP's names, e.g. GeoLite2-City, DBIP-ASN-Lite). */
const KINDS: Readonly<Record<GeoDatabase, { re: RegExp; what: string }>> = {
  city: { re: /city|country/i, what: 'a City or Country database' },
  asn: { re: /asn|isp/i, what: 'an ASN database' },
};

interface Loaded {
  reader: Reader<Response>;
  mtimeMs: number;
  size: number;
  type: string;
}

export interface GeoIpOptions {
  readonly reloadIntervalMs?: number;
  readonly onError?: (database: GeoDatabase, err: Error) => void;
  readonly onReload?: (database: GeoDatabase, type: string) => void;
}

/** Reads and checks one file; throws HooklogError CONFIG_INVALID saying what is wrong. */
function load(database: GeoDatabase, path: string): Loaded {
  let st;
  let buf: Buffer;
  try {
    st = statSync(path);
    if (st.size > MAX_FILE_BYTES)
      throw new HooklogError('CONFIG_INVALID', `enrichment.geoip.${database}: ${path} is larger than 1 GiB`);
    buf = readFileSync(path);
  } catch (err) {
    if (err instanceof HooklogError) throw err;
    throw new HooklogError(
      'CONFIG_INVALID',
      `enrichment.geoip.${database}: cannot read ${path}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  let reader: Reader<Response>;
  try {
    reader = new Reader<Response>(buf);
  } catch (err) {
    throw new HooklogError(
      'CONFIG_INVALID',
      `enrichment.geoip.${database}: ${path} is not a MaxMind DB (MMDB) file: ${(err as Error).message.slice(0, 200)}`,
      { cause: err },
    );
  }
  const type = String(reader.metadata.databaseType ?? '');
  if (!KINDS[database].re.test(type))
    throw new HooklogError(
      'CONFIG_INVALID',
      `enrichment.geoip.${database}: ${path} is a ${JSON.stringify(type.slice(0, 80))} database; ${database} takes ${KINDS[database].what}`,
    );
  return { reader, mtimeMs: st.mtimeMs, size: st.size, type };
}

const obj = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** A name map's English name, else its first (DB-IP lite names cities in English; some places only locally). */
function nameOf(v: unknown): unknown {
  const names = obj(obj(v)['names']);
  return names['en'] ?? Object.values(names)[0];
}

/**
 * The configured databases, read at construction (a file that does not load fails the boot) and re-read on
 * change once `start()`ed.
 */
export class GeoIp implements GeoLookup {
  readonly #paths: ReadonlyArray<[GeoDatabase, string]>;
  readonly #loaded = new Map<GeoDatabase, Loaded>();
  readonly #opts: GeoIpOptions;
  #timer: NodeJS.Timeout | undefined;
  /** Reloads that failed, by database, since start (the last good one was kept). */
  readonly reloadErrors = new Map<GeoDatabase, number>();

  constructor(config: GeoipConfig, opts: GeoIpOptions = {}) {
    this.#paths = (['city', 'asn'] as const).flatMap((d) =>
      config[d] ? [[d, config[d]] as [GeoDatabase, string]] : [],
    );
    this.#opts = opts;
    for (const [d, p] of this.#paths) this.#loaded.set(d, load(d, p));
  }

  /** Whether any database is configured (else no event is looked up). */
  get configured(): boolean {
    return this.#paths.length > 0;
  }

  /** The `database_type` of each loaded database, for the log at start. */
  types(): Partial<Record<GeoDatabase, string>> {
    return Object.fromEntries([...this.#loaded].map(([d, l]) => [d, l.type]));
  }

  #get(database: GeoDatabase, address: string): Record<string, unknown> | null {
    const l = this.#loaded.get(database);
    if (!l || isIP(address) === 0) return null;
    try {
      return l.reader.get(address) as Record<string, unknown> | null;
    } catch {
      // A corrupt data section under one address: that address has no answer, the rest still do.
      return null;
    }
  }

  geo(address: string): Enrichment['geo'] | null {
    const r = this.#get('city', address);
    if (!r) return null;
    const loc = obj(r['location']);
    const country = obj(r['country'])['iso_code'] ?? obj(r['registered_country'])['iso_code'];
    return {
      country: country as string,
      city: nameOf(r['city']) as string,
      lat: loc['latitude'] as number,
      lon: loc['longitude'] as number,
    };
  }

  asn(address: string): Enrichment['asn'] | null {
    const r = this.#get('asn', address);
    if (!r) return null;
    return {
      number: r['autonomous_system_number'] as number,
      organization: r['autonomous_system_organization'] as string,
    };
  }

  /** Checks every file once: re-reads the changed ones. */
  refresh(): void {
    for (const [d, path] of this.#paths) {
      const cur = this.#loaded.get(d)!;
      let st;
      try {
        st = statSync(path);
      } catch (err) {
        this.#failed(d, err as Error, cur);
        continue;
      }
      if (st.mtimeMs === cur.mtimeMs && st.size === cur.size) continue;
      try {
        const next = load(d, path);
        this.#loaded.set(d, next);
        this.#opts.onReload?.(d, next.type);
      } catch (err) {
        // Remember the stamp, so one bad version is reported once, not at every poll.
        this.#failed(d, err as Error, cur, st);
      }
    }
  }

  #failed(d: GeoDatabase, err: Error, cur: Loaded, st?: { mtimeMs: number; size: number }): void {
    if (st && st.mtimeMs === cur.mtimeMs && st.size === cur.size) return;
    if (st) this.#loaded.set(d, { ...cur, mtimeMs: st.mtimeMs, size: st.size });
    else if (cur.mtimeMs === -1) return;
    else this.#loaded.set(d, { ...cur, mtimeMs: -1, size: -1 });
    this.reloadErrors.set(d, (this.reloadErrors.get(d) ?? 0) + 1);
    this.#opts.onError?.(d, err);
  }

  start(): void {
    if (this.#timer || this.#paths.length === 0) return;
    this.#timer = setInterval(() => this.refresh(), this.#opts.reloadIntervalMs ?? 5000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
