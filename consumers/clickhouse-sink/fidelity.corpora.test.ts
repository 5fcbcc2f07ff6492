/**
 * Conformance of the event mapping on the public sample events (../shared
 * corpora): every event maps to the lower-cased uuid of what was sent, raw
 * byte-exact; an event's upper-cased copy maps to the same key; and where the
 * client address is missing or unusable, request.ipChain supplies it if it can.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORPORA_DIR } from '../../test/support/corpus.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { mapEventRecord } from './rows.js';

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
      expect(r.row.client_ip).toBe(own ?? chained ?? '::');
      // The same event with its address blanked falls back to the chain.
      const blanked = mapEventRecord(rec(JSON.stringify({ ...e, client: { ...(e.client ?? {}), ipAddress: 'null' } })));
      expect(blanked.ok && blanked.row.client_ip).toBe(chained ?? '::');
    }
  });
});
