/**
 * One alert: what fired, the events behind it (each linked to its user and IP), the timeline of its users and IPs
 * around it (timeline.tsx), its rule, its history.
 */
import { eventsHref, getJson, ipHref, seg, userHref, withQuery, type Me } from '../api.js';
import { ChangeForm } from './change-form.js';
import { Timeline } from './timeline.js';
import type { ComponentChildren } from 'preact';
import { KeyLinks, type AlertRow } from './alerts.js';
import { ErrorBox, label, Loading, Table, useData, utc, Value } from '../ui.js';

interface Detail {
  alert: AlertRow & { first_event_time: string; kind: string; event_ids: string[] };
  events: Array<Record<string, unknown> & { uuid: string; actor: string | null; client_ip: string | null }>;
  history: Array<Record<string, unknown>>;
  rule: Record<string, unknown> | null;
}

export function AlertPage({ id, me }: { id: string; me: Me }) {
  const { data, error, reload } = useData(() => getJson<Detail>(`/console/api/alerts/${seg(id)}`), id);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="the alert" />;
  const a = data.alert;
  // The events of the alert lie within its span (its first and last event).
  const iso = (t: string, deltaMs: number) => new Date(Date.parse(`${t.replace(' ', 'T')}Z`) + deltaMs).toISOString();
  const span = { since: iso(a.first_event_time, -86_400_000), until: iso(a.event_time, 1000) };
  const groupBy = Array.isArray(data.rule?.group_by) ? (data.rule.group_by as string[]) : null;
  const facts: Array<[string, string | ComponentChildren]> = [
    ['Org', a.org],
    ['Rule', `${a.rule_title} (${a.rule_id})`],
    ['Severity', a.severity],
    ['Kind', a.kind],
    ['Key', <KeyLinks org={a.org} groupKey={a.group_key} fields={groupBy} />],
    ['First event', utc(a.first_event_time)],
    ['Last event', utc(a.event_time)],
    ['Events', a.event_count],
    ['Status', `${a.status}${a.resolution ? ` (${a.resolution})` : ''}`],
    ['Assignee', a.assignee ?? ''],
  ];
  return (
    <section>
      <h1>Alert: {label(a.rule_title || a.rule_id)}</h1>
      <dl class="facts">
        {facts.map(([k, v]) => (
          <>
            <dt>{k}</dt>
            <dd>{typeof v === 'string' ? <Value v={v} /> : v}</dd>
          </>
        ))}
      </dl>
      <p>
        <a href={withQuery('/console/alerts', { org: a.org, rule: a.rule_id })}>Other alerts of this rule</a>
      </p>
      {me.role === 'analyst' && <ChangeForm me={me} ids={[a.alert_id]} statuses={[a.status]} onDone={reload} />}
      <Table
        caption="Events behind the alert"
        rows={data.events}
        columns={[
          { key: 'published', label: 'Time', render: (e) => utc(String(e.published ?? '')) },
          { key: 'event_type', label: 'Type' },
          {
            key: 'actor',
            label: 'User',
            render: (e) => (e.actor ? <Value v={e.actor} href={userHref(a.org, e.actor)} /> : ''),
          },
          {
            key: 'client_ip',
            label: 'IP',
            render: (e) => (e.client_ip ? <Value v={e.client_ip} href={ipHref(e.client_ip, a.org)} /> : ''),
          },
          { key: 'geo_country', label: 'Country' },
          { key: 'client_user_agent', label: 'User agent' },
          { key: 'outcome', label: 'Outcome' },
          { key: 'display_message', label: 'Message' },
          {
            key: 'uuid',
            label: 'Event',
            render: (e) => <Value v={e.uuid} href={eventsHref({ org: a.org, uuid: e.uuid, ...span })} />,
          },
        ]}
      />
      <Timeline id={a.alert_id} org={a.org} />
      <h2>Rule</h2>
      {data.rule ? (
        <dl class="facts">
          {Object.entries(data.rule).map(([k, v]) => (
            <>
              <dt>{k}</dt>
              <dd>
                <Value v={v} />
              </dd>
            </>
          ))}
        </dl>
      ) : (
        <p class="muted">This process does not have the rule's definition (alerting is configured elsewhere).</p>
      )}
      <Table
        caption="History"
        empty="no changes yet: open since it fired."
        rows={data.history}
        columns={[
          { key: 'at', label: 'When', render: (h) => utc(String(h.at ?? '')) },
          { key: 'actor_name', label: 'Who' },
          { key: 'action', label: 'What' },
          { key: 'status', label: 'Status' },
          { key: 'resolution', label: 'Resolution' },
          { key: 'assignee', label: 'Assignee' },
          { key: 'note', label: 'Note' },
        ]}
      />
    </section>
  );
}
