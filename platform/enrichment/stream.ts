/**
 * Where an event is enriched: once, as it is appended to `<prefix>.logs`, by wrapping the stream (openStream
 * applies it when `enrichment.geoip` names a database), so every path that appends events (hooks, pollers,
 * SSF, backfill) enriches them and none can forget. The answer rides in the `hooklog-enrichment` header; the
 * event's bytes are untouched, and a reader that does not know the header (the previous release) reads the
 * record as before. Everything downstream (the sink's columns, the rule engine's `enrichment.*`) reads that
 * header, never the database, so all of them see one answer per record, made with the database of that moment.
 *
 * A record that already carries the header keeps it (a copy re-appended keeps its first answer). Legacy events
 * (`<prefix>.legacy-events`) are not enriched: no rule reads them and their table has no such columns.
 */
import type { Logger } from '../log.js';
import { counter } from '../metrics.js';
import type { Stream, StreamRecord, TopicWrite, Transactor } from '../stream/types.js';
import { ENRICHMENT_HEADER, encodeEnrichment, enrichEvent, type GeoLookup } from './enrichment.js';
import { GeoIp, type GeoipConfig } from './geoip.js';

const reloadErrors = counter({
  name: 'hooklog_geoip_reload_errors_total',
  help: 'Reloads of an enrichment.geoip database file that failed (unreadable, not an MMDB, or of the wrong kind); the last good database stays in use.',
  labelNames: ['database'],
});

const reloads = counter({
  name: 'hooklog_geoip_reloads_total',
  help: 'Reloads of an enrichment.geoip database file that changed and loaded; answers come from the new database from then on.',
  labelNames: ['database'],
});

const enriched = counter({
  name: 'hooklog_enriched_events_total',
  help: 'Events appended to <prefix>.logs with a GeoIP enrichment header, by what it holds (geo, asn, both).',
  labelNames: ['holds'],
});

/** The configured databases, read now (a bad file is a CONFIG_INVALID error), polled for changes from now on. */
export function openGeoIp(config: GeoipConfig, reloadIntervalMs: number, logger: Logger): GeoIp {
  const log = logger.child({ component: 'geoip' });
  const geo = new GeoIp(config, {
    reloadIntervalMs,
    onError: (database, err) => {
      reloadErrors.inc({ database });
      log.warn({ database, err: err.message }, 'geoip database reload failed; the last good database stays in use');
    },
    onReload: (database, type) => {
      reloads.inc({ database });
      log.info({ database, type }, 'geoip database reloaded');
    },
  });
  if (geo.configured) log.info({ databases: geo.types() }, 'geoip databases loaded');
  geo.start();
  return geo;
}

/** `records` with their enrichment header added where the event gets one. */
export function enrichRecords(records: readonly StreamRecord[], lookup: GeoLookup): StreamRecord[] {
  return records.map((r) => {
    if (r.headers[ENRICHMENT_HEADER] !== undefined) return r;
    let event: unknown;
    try {
      event = JSON.parse(r.value.toString('utf8'));
    } catch {
      return r; // Not an event: the consumers dead-letter it as they would have.
    }
    if (event === null || typeof event !== 'object' || Array.isArray(event)) return r;
    const e = enrichEvent(event as Record<string, unknown>, lookup);
    const text = encodeEnrichment(e);
    if (text === null) return r;
    enriched.inc({ holds: e!.geo && e!.asn ? 'both' : e!.geo ? 'geo' : 'asn' });
    return { ...r, headers: { ...r.headers, [ENRICHMENT_HEADER]: text } };
  });
}

/** The stream, enriching what is appended to `<prefix>.logs` with `lookup` (see the module comment). */
export function withEnrichment(
  inner: Stream,
  opts: { prefix: string; lookup: GeoLookup; onClose?: () => void },
): Stream {
  const logs = `${opts.prefix}.logs`;
  const one = (topic: string, records: readonly StreamRecord[]) =>
    topic === logs ? enrichRecords(records, opts.lookup) : records;
  const all = (writes: readonly TopicWrite[]): TopicWrite[] =>
    writes.map((w) => (w.topic === logs ? { topic: w.topic, records: one(w.topic, w.records) } : w));
  return {
    ...inner,
    kind: inner.kind,
    append: (topic, records) => inner.append(topic, one(topic, records)),
    appendAtomically: (writes) => inner.appendAtomically(all(writes)),
    claim: async (owner, stillOwner): Promise<Transactor> => {
      const t = await inner.claim(owner, stillOwner);
      return { owner: t.owner, appendAtomically: (writes) => t.appendAtomically(all(writes)), close: () => t.close() };
    },
    close: async () => {
      opts.onClose?.();
      await inner.close();
    },
  };
}
