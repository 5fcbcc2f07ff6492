/** The events behind a figure: the filters are the URL's; each event's raw JSON on request, as text. */
import { useState } from 'preact/hooks';
import { getJson, ipHref, params, seg, userHref } from '../api.js';
import { visible } from '../../display.js';
import { ErrorBox, label, Loading, Table, useData, Value } from '../ui.js';

type Ev = Record<string, unknown> & { org: string; uuid: string; actor: string | null; ip: string | null };

export function Raw({ org, uuid }: { org: string; uuid: string }) {
  const [raw, setRaw] = useState<string | undefined>();
  // The raw JSON escapes controls itself (\u0000), but not bidi or zero-width characters: drawn like every value.
  if (raw !== undefined) return <pre class="raw">{visible(raw)}</pre>;
  return (
    <button
      type="button"
      onClick={async () => {
        const r = await getJson<{ raw: string }>(`/console/api/events/${seg(org)}/${seg(uuid)}`);
        try {
          setRaw(JSON.stringify(JSON.parse(r.raw), null, 2));
        } catch {
          setRaw(r.raw);
        }
      }}
    >
      Show raw
    </button>
  );
}

export function EventsPage() {
  const p = params();
  const { data, error } = useData(() => getJson<{ events: Ev[] }>('/console/api/events', p), location.search);
  const filters = Object.entries(p).filter(([k]) => !['org', 'since', 'until', 'limit'].includes(k));
  return (
    <section>
      <h1>Events</h1>
      <p class="muted">
        Org {label(p.org ?? '', 100)}
        {filters.map(([k, v]) => ` · ${label(k, 40)} = ${label(v, 100)}`).join('')}
        {p.since ? ` · since ${label(p.since, 40)}` : ''}
        {p.until ? ` · until ${label(p.until, 40)}` : ''}
      </p>
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="events" />}
      {data && (
        <Table
          caption={`${data.events.length} events (newest first)`}
          rows={data.events}
          columns={[
            { key: 'published', label: 'Time' },
            { key: 'event_type', label: 'Type' },
            {
              key: 'actor',
              label: 'User',
              render: (e) => (e.actor ? <Value v={e.actor} href={userHref(e.org, e.actor)} /> : ''),
            },
            { key: 'targets', label: 'Targets' },
            {
              key: 'ip',
              label: 'IP',
              render: (e) => (e.ip ? <Value v={e.ip} href={ipHref(e.ip, e.org)} /> : ''),
            },
            { key: 'country', label: 'Country' },
            { key: 'device', label: 'Device' },
            { key: 'outcome', label: 'Outcome' },
            { key: 'reason', label: 'Reason' },
            { key: 'display_message', label: 'Message' },
            { key: 'uuid', label: 'Raw', render: (e) => <Raw org={e.org} uuid={e.uuid} /> },
          ]}
        />
      )}
    </section>
  );
}
