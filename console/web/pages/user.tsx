/** One user of one org: sign-ins over time, where from, with what, what they changed, their alerts and risk. */
import { eqFilter, eventsHref, getJson, ipHref, params, searchHref, seg } from '../api.js';
import { Chart, epochS } from '../chart.js';
import { ErrorBox, Loading, RangeForm, Table, useData, utc, Value } from '../ui.js';
import type { AlertRow } from './alerts.js';
import { Breakdown, type Figure, type TimePoint } from './figures.js';

interface UserData {
  /** The login (the URL's reference resolved). */
  user: string;
  since: string;
  until: string;
  signIns: TimePoint[];
  country: Figure[];
  ip: Figure[];
  device: Figure[];
  event_type: Figure[];
  factor: Figure[];
  admin: Array<Record<string, unknown> & { uuid: string; role: string }>;
  alerts: AlertRow[];
  risk: Array<Record<string, unknown>> | null;
  /** What the identity sync last read of the user; null when it has nothing (off, not synced, deleted). */
  identity: {
    user_id: string;
    status: string;
    groups: Array<{ id: string; name: string }>;
    more_groups: number;
    admin_roles: string[];
    truncated: boolean;
    last_updated: string | null;
    synced_at: string;
  } | null;
}

export function UserPage({ org, user }: { org: string; user: string }) {
  const p = params();
  const { data, error } = useData(
    () => getJson<UserData>(`/console/api/users/${seg(org)}/${seg(user)}`, { since: p.since, until: p.until }),
    location.search,
  );
  const range = data ? { since: `${data.since.replace(' ', 'T')}Z`, until: `${data.until.replace(' ', 'T')}Z` } : {};
  // Links carry the login itself (eventsHref makes a long one a reference again), not the URL's reference.
  const login = data?.user ?? user;
  const events = (filter: Record<string, string>) => eventsHref({ org, user: login, ...range, ...filter });
  return (
    <section>
      <h1>
        User <Value v={login} />
      </h1>
      <p class="muted">
        Org <Value v={org} />
      </p>
      <RangeForm p={p} />
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="the user" />}
      {data && (
        <>
          <Directory identity={data.identity} />
          <Chart
            title="Sign-ins (click a point for its events)"
            data={{
              x: data.signIns.map((t) => epochS(t.t)),
              series: [
                { label: 'success', values: data.signIns.map((t) => Number(t.success)) },
                { label: 'failure', values: data.signIns.map((t) => Number(t.failure)) },
              ],
            }}
            onPick={(i) => {
              const t = data.signIns[i];
              const next = data.signIns[i + 1];
              if (t)
                location.assign(
                  eventsHref({
                    org,
                    user: login,
                    sign_in: '1',
                    since: `${t.t.replace(' ', 'T')}Z`,
                    until: next ? `${next.t.replace(' ', 'T')}Z` : range.until,
                  }),
                );
            }}
          />
          <p>
            <a href={events({ sign_in: '1' })}>All sign-in events in this range</a>
            {' · '}
            <SearchThese org={org} filter={eqFilter('actor.alternateId', login)} range={range} />
          </p>
          <div class="grid">
            <Breakdown caption="Countries" rows={data.country} link={(v) => events({ country: v })} />
            <Breakdown
              caption="IPs"
              rows={data.ip}
              link={(v) => events({ ip: v })}
              page={(v) => (v ? ipHref(v, org) : undefined)}
            />
            <Breakdown
              caption="Devices (browser / OS / device)"
              rows={data.device}
              link={(v) => events({ device: v })}
            />
            <Breakdown caption="Factors" rows={data.factor} link={(v) => events({ factor: v })} />
            <Breakdown caption="Event types" rows={data.event_type} link={(v) => events({ event_type: v })} />
          </div>
          <Table
            caption="Admin actions by and to this user"
            rows={data.admin}
            columns={[
              { key: 'published', label: 'Time' },
              { key: 'role', label: 'By / to' },
              { key: 'event_type', label: 'Type' },
              { key: 'actor', label: 'Actor' },
              { key: 'targets', label: 'Targets' },
              { key: 'outcome', label: 'Outcome' },
              {
                key: 'uuid',
                label: 'Event',
                render: (e) => <Value v={e.uuid} href={eventsHref({ org, uuid: e.uuid, ...range })} />,
              },
            ]}
          />
          <Table
            caption="Alerts"
            rows={data.alerts}
            columns={[
              { key: 'event_time', label: 'Time', render: (r) => utc(r.event_time) },
              {
                key: 'rule_title',
                label: 'Rule',
                render: (r) => <Value v={r.rule_title || r.rule_id} href={`/console/alerts/${seg(r.alert_id)}`} />,
              },
              { key: 'severity', label: 'Severity' },
              { key: 'status', label: 'Status' },
            ]}
          />
          <h2>Risk</h2>
          {data.risk === null ? (
            <p class="muted">Risk is not available in this deployment.</p>
          ) : (
            <Table
              caption="Risk changes"
              rows={data.risk}
              columns={Object.keys(data.risk[0] ?? { at: '' }).map((k) => ({ key: k, label: k }))}
            />
          )}
        </>
      )}
    </section>
  );
}

/** The user's status, groups and administrator roles as the identity sync last read them (every value as text). */
function Directory({ identity }: { identity: UserData['identity'] }) {
  if (!identity)
    return (
      <p class="muted" id="identity">
        Directory: nothing synced for this user (identity_sync is off for the org, has not reached the user yet, or the
        user was deleted).
      </p>
    );
  return (
    <dl class="identity" id="identity">
      <dt>Status</dt>
      <dd data-field="status">
        <Value v={identity.status} />
      </dd>
      <dt>User id</dt>
      <dd>
        <Value v={identity.user_id} />
      </dd>
      <dt>Admin roles</dt>
      <dd data-field="admin-roles">
        {identity.admin_roles.length === 0 ? (
          <span class="muted">none</span>
        ) : (
          <ul>
            {identity.admin_roles.map((r) => (
              <li>
                <Value v={r} />
              </li>
            ))}
          </ul>
        )}
      </dd>
      <dt>Groups</dt>
      <dd data-field="groups">
        {identity.groups.length === 0 ? (
          <span class="muted">none</span>
        ) : (
          <ul>
            {identity.groups.map((g) => (
              <li title={g.id}>
                <Value v={g.name || g.id} />
              </li>
            ))}
          </ul>
        )}
        {identity.more_groups > 0 && <p class="muted">and {identity.more_groups.toLocaleString('en')} more</p>}
        {identity.truncated && <p class="muted">The service listed more groups or roles than a record keeps.</p>}
      </dd>
      <dt>Synced</dt>
      <dd>
        {utc(identity.synced_at)}
        {identity.last_updated && <> (changed in the service {utc(identity.last_updated)})</>}
      </dd>
    </dl>
  );
}

/** A link to the Search page over the page's range, or a note when the value is too long for a URL. */
export function SearchThese({
  org,
  filter,
  range,
}: {
  org: string;
  filter: string | undefined;
  range: { since?: string; until?: string };
}) {
  return filter ? (
    <a href={searchHref({ org, filter, ...range })}>Search these events</a>
  ) : (
    <span class="muted">Too long to search by in a URL: use the events links.</span>
  );
}
