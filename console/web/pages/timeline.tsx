/**
 * An alert's timeline: what its users and IPs did around it (±1 h unless the URL's `window` says otherwise),
 * grouped by session, each session, user, IP and event a link into the Search page with the matching filter
 * over the timeline's range. A value too long for a URL (display.ts MAX_LINKED) is shown but not linked.
 */
import { eqFilter, getJson, params, searchHref } from '../api.js';
import { ErrorBox, Field, label, Loading, Table, useData, utc, Value } from '../ui.js';

interface TimelineEvent extends Record<string, unknown> {
  uuid: string;
  published: string;
  event_type: string;
  actor: string | null;
  client_ip: string | null;
  outcome: string | null;
  display_message: string | null;
  session: string;
  by_user: number;
  from_ip: number;
}

interface TimelineData {
  since: string;
  until: string;
  window_minutes: number;
  users: string[];
  ips: string[];
  sessions: Array<{ session: string; first: string; last: string; events: TimelineEvent[] }>;
  truncated: boolean;
}

const iso = (t: string) => `${t.replace(' ', 'T')}Z`;
const SESSION = 'authenticationContext.externalSessionId';

export function Timeline({ id, org }: { id: string; org: string }) {
  const p = params();
  const { data, error } = useData(
    () => getJson<TimelineData>(`/console/api/alerts/${encodeURIComponent(id)}/timeline`, { window: p.window }),
    `${id}${location.search}`,
  );
  const search = (filter: string | undefined) =>
    filter && data ? searchHref({ org, filter, since: iso(data.since), until: iso(data.until) }) : undefined;
  /** `v` linked to the Search page for `field eq v`, or shown without a link when too long for a URL. */
  const linked = (field: string, v: string, what: string) => {
    const href = search(eqFilter(field, v));
    return (
      <>
        <Value v={v} href={href} />
        {href ? '' : <span class="muted"> ({what} too long to search by)</span>}
      </>
    );
  };
  return (
    <section aria-label="Timeline">
      <h2>Timeline: the alert's users and IPs around it</h2>
      <form method="get" class="filters" aria-label="Timeline window">
        <Field id="f-window" label="Minutes each side" help="1 to 10080; 60 unless given">
          <input
            id="f-window"
            name="window"
            value={p.window ?? ''}
            placeholder="60"
            inputMode="numeric"
            aria-describedby="f-window-help"
          />
        </Field>
        <button type="submit">Show</button>
      </form>
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="the timeline" />}
      {data && (
        <>
          <p>
            {utc(data.since)} to {utc(data.until)} (±{data.window_minutes} min).{' '}
            {data.users.map((u) => (
              <span>User {linked('actor.alternateId', u, 'login')}. </span>
            ))}
            {data.ips.map((ip) => (
              <span>IP {linked('client.ipAddress', ip, 'IP')}. </span>
            ))}
            {data.truncated && <strong>Only the first events are shown: narrow the window.</strong>}
          </p>
          {data.sessions.length === 0 && <p class="muted">No events of these users or IPs in this window.</p>}
          {data.sessions.map((s) => (
            <Table
              caption={
                s.session
                  ? `Session ${label(s.session, 100)}: ${s.events.length} events`
                  : `No session: ${s.events.length} events`
              }
              rows={s.events}
              columns={[
                { key: 'published', label: 'Time', render: (e) => utc(e.published) },
                {
                  key: 'session',
                  label: 'Session',
                  render: (e) => (e.session ? linked(SESSION, e.session, 'session') : ''),
                },
                { key: 'event_type', label: 'Type' },
                {
                  key: 'actor',
                  label: 'User',
                  render: (e) => (e.actor ? linked('actor.alternateId', e.actor, 'login') : ''),
                },
                {
                  key: 'client_ip',
                  label: 'IP',
                  render: (e) => (e.client_ip ? linked('client.ipAddress', e.client_ip, 'IP') : ''),
                },
                { key: 'outcome', label: 'Outcome' },
                { key: 'display_message', label: 'Message' },
                {
                  key: 'uuid',
                  label: 'Event',
                  render: (e) => (
                    <a href={search(eqFilter('uuid', e.uuid))} aria-label={`search event ${label(e.uuid, 60)}`}>
                      <Value v={e.uuid} />
                    </a>
                  ),
                },
              ]}
            />
          ))}
        </>
      )}
    </section>
  );
}
