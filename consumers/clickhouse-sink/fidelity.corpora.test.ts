/**
 * Conformance of the event mapping and the events table on the public sample
 * events (../shared corpora): every event maps to the lower-cased uuid of what
 * was sent, raw byte-exact; an event's upper-cased copy maps to the same key;
 * where the client address is missing or unusable, request.ipChain supplies it
 * if it can (IPv4 as a.b.c.d); and a hook copy (upper-case uuid, "null" IP, no
 * geography) and a poller copy of each event fold into one row with every
 * value either copy knew, whichever was written first, unknown kept NULL.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPORA_DIR } from '../../test/support/corpus.js';
import { randomName } from '../../test/support/wait.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore } from '../../platform/store/index.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { mapEventRecord, type EventRow } from './rows.js';

const lines = readFileSync(join(CORPORA_DIR, 'logevents.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '');
const rec = (value: string): ConsumedRecord => ({
  topic: 't',
  partition: 0,
  offset: 0,
  key: null,
  value: Buffer.from(value),
  headers: {},
  timestamp: 0,
});

describe('event mapping on the corpus', () => {
  it('keys every event by its lower-cased uuid, and its upper-cased copy by the same key', () => {
    let mapped = 0;
    for (const line of lines) {
      const r = mapEventRecord(rec(line));
      if (!r.ok) continue;
      mapped++;
      const e = JSON.parse(line) as { uuid: string };
      expect(r.row.uuid).toBe(e.uuid.toLowerCase());
      expect(r.row.raw).toBe(line);
      const upper = mapEventRecord(rec(JSON.stringify({ ...e, uuid: e.uuid.toUpperCase() })));
      expect(upper.ok && upper.row.uuid).toBe(r.row.uuid);
    }
    expect(mapped).toBeGreaterThan(100);
  });

  it('takes the client IP from the event, else from the first usable address of request.ipChain', () => {
    for (const line of lines) {
      const r = mapEventRecord(rec(line));
      if (!r.ok) continue;
      const e = JSON.parse(line) as {
        client?: { ipAddress?: unknown };
        request?: { ipChain?: Array<{ ip?: unknown }> };
      };
      const own = typeof e.client?.ipAddress === 'string' && isIP(e.client.ipAddress) ? e.client.ipAddress : undefined;
      const chained = (e.request?.ipChain ?? [])
        .map((h) => h?.ip)
        .find((ip): ip is string => typeof ip === 'string' && isIP(ip) !== 0);
      const v4 = (ip: string | undefined) => (ip === undefined ? null : ip.replace(/^::ffff:(?=\d+\.)/i, ''));
      expect(r.row.client_ip?.toLowerCase() ?? null).toBe(v4(own ?? chained)?.toLowerCase() ?? null);
      // The same event with its address blanked falls back to the chain.
      const blanked = mapEventRecord(rec(JSON.stringify({ ...e, client: { ...(e.client ?? {}), ipAddress: 'null' } })));
      expect(blanked.ok && (blanked.row.client_ip?.toLowerCase() ?? null)).toBe(v4(chained)?.toLowerCase() ?? null);
    }
  });

  it('folds a hook copy and a poller copy of every event into one row with every known value, in either order', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-fidelity-corpora-'));
    const store = openStore({ database: randomName('fidcorp'), dataDir, logger: silentLogger() });
    try {
      await migrate(store, silentLogger());
      const asRow = (e: object, org: string, source: string): EventRow => {
        const r = mapEventRecord({
          ...rec(JSON.stringify(e)),
          headers: { [Header.org]: org, [Header.source]: source },
        });
        if (!r.ok) throw new Error(r.reason);
        return r.row;
      };
      type Ev = Record<string, unknown> & { uuid: string; client?: unknown };
      const seen = new Set<string>();
      const events: Ev[] = [];
      for (const line of lines) {
        const r = mapEventRecord(rec(line));
        if (!r.ok) continue;
        const key = `${r.row.event_type}|${r.row.published}|${r.row.uuid}`;
        if (seen.has(key)) continue; // the corpus repeats some events: one row each is the point
        seen.add(key);
        events.push(JSON.parse(line) as Ev);
      }
      // The hook copy: upper-case uuid, a "null" address, no geography; everything else as sent.
      const hookCopy = (e: Ev): Ev => {
        const client = e.client !== null && typeof e.client === 'object' ? { ...(e.client as object) } : {};
        delete (client as Record<string, unknown>).geographicalContext;
        return { ...e, uuid: e.uuid.toUpperCase(), client: { ...client, ipAddress: 'null' } };
      };
      const [hookFirst, pollFirst] = [randomName('hookfirst'), randomName('pollfirst')];
      const first = [
        ...events.map((e) => asRow(hookCopy(e), hookFirst, 'hook')),
        ...events.map((e) => asRow(e, pollFirst, 'system-log')),
      ];
      const second = [
        ...events.map((e) => asRow(e, hookFirst, 'system-log')),
        ...events.map((e) => asRow(hookCopy(e), pollFirst, 'hook')),
      ];
      await store.insertJson(EVENTS_TABLE, first);
      await store.insertJson(EVENTS_TABLE, second);

      // What the fold must give: the later copy's value where it knows one, else the earlier copy's.
      const skip = new Set(['org', 'source', 'hook_id', 'delivery_id', 'received_at']);
      const expected = first.map((a, i) => {
        const b = second[i]!;
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(a) as Array<[keyof EventRow, unknown]>) {
          if (skip.has(k)) continue;
          out[k] = k === 'raw' ? v : Array.isArray(v) ? (v.length ? v : b[k]) : (b[k] ?? v);
        }
        return { org: a.org, ...out };
      });
      const key = (r: Record<string, unknown>) =>
        `${r.org as string}|${r.event_type as string}|${r.published as string}|${r.uuid as string}`;
      const cols = Object.keys(expected[0]!).join(', ');
      const got = await store.query<Record<string, unknown>>(
        `SELECT ${cols} FROM ${store.database}.events WHERE org IN {orgs:Array(String)}`,
        { orgs: [hookFirst, pollFirst] },
      );
      expect(got).toHaveLength(2 * events.length); // one row per event and org
      const byKey = new Map(got.map((r) => [key(r), r]));
      for (const want of expected) expect(byKey.get(key(want))).toEqual(want);

      // The poller copy's geography survived the hook copy's lack of it, and false stayed false.
      const original = new Map(events.map((e) => [e.uuid.toLowerCase(), e]));
      const withCity = got.filter((r) => r.geo_city !== null).length;
      const sentCity = [...original.values()].filter((e) => {
        const c = (e.client as { geographicalContext?: { city?: unknown } } | null | undefined)?.geographicalContext
          ?.city;
        return typeof c === 'string' || typeof c === 'number';
      }).length;
      expect(withCity).toBe(2 * sentCity);
      expect(sentCity).toBeGreaterThan(20);
      const proxy = (v: unknown) => got.filter((r) => r.is_proxy === v).length;
      expect(proxy(false)).toBeGreaterThan(0);
      expect(proxy(null)).toBeGreaterThan(0); // events without securityContext.isProxy: unknown, not false
    } finally {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
