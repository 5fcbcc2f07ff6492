/** The alert list: filters in the URL; select alerts and change them together. */
import { useState } from 'preact/hooks';
import { getJson, params, seg, type Me } from '../api.js';
import type { AlertStatus } from '../../lifecycle.js';
import { ChangeForm } from './change-form.js';
import { ErrorBox, Field, Keep, label, Loading, RangeFields, Table, useData, Value } from '../ui.js';

export interface AlertRow extends Record<string, unknown> {
  alert_id: string;
  org: string;
  rule_id: string;
  rule_title: string;
  severity: string;
  status: AlertStatus;
  resolution: string;
  assignee: string | null;
  event_time: string;
  event_count: string;
  group_key: string;
}

interface Facet {
  rule_id: string;
  rule_title: string;
  severity: string;
}

export function AlertsPage({ me }: { me: Me }) {
  const p = params();
  const { data, error, reload } = useData(
    () => getJson<{ alerts: AlertRow[]; facets: Facet[] }>('/console/api/alerts', p),
    location.search,
  );
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const select = (title: string, name: string, options: ReadonlyArray<[string, string]>) => (
    <Field id={`f-${name}`} label={title}>
      <select id={`f-${name}`} name={name} value={p[name] ?? ''}>
        <option value="">any</option>
        {options.map(([v, t]) => (
          <option value={v}>{label(t, 100)}</option>
        ))}
      </select>
    </Field>
  );
  return (
    <section>
      <h1>Alerts</h1>
      <form method="get" class="filters" aria-label="Filter alerts">
        {select(
          'Org',
          'org',
          me.orgs.map((o) => [o, o]),
        )}
        {select(
          'Rule',
          'rule',
          (data?.facets ?? []).map((f) => [f.rule_id, f.rule_title || f.rule_id]),
        )}
        {select(
          'Severity',
          'severity',
          ['critical', 'high', 'medium', 'low', 'informational'].map((s) => [s, s]),
        )}
        {select(
          'Status',
          'status',
          ['open', 'acknowledged', 'closed'].map((s) => [s, s]),
        )}
        <RangeFields p={p} sinceHint="30 days ago" />
        <Keep p={p} names={['assignee']} />
        <button type="submit">Filter</button>
      </form>
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="alerts" />}
      {data && (
        <>
          {me.role === 'analyst' && (
            <ChangeForm
              me={me}
              ids={[...selected]}
              statuses={data.alerts.filter((r) => selected.has(r.alert_id)).map((r) => r.status)}
              onDone={() => {
                setSelected(new Set());
                reload();
              }}
            />
          )}
          <Table
            caption={`${data.alerts.length} alerts`}
            rows={data.alerts}
            columns={[
              ...(me.role === 'analyst'
                ? [
                    {
                      key: 'pick',
                      label: 'Select',
                      render: (r: AlertRow) => (
                        <input
                          type="checkbox"
                          aria-label={`Select alert ${r.alert_id}`}
                          checked={selected.has(r.alert_id)}
                          onChange={() => toggle(r.alert_id)}
                        />
                      ),
                    },
                  ]
                : []),
              { key: 'event_time', label: 'Time' },
              { key: 'org', label: 'Org' },
              {
                key: 'rule_title',
                label: 'Rule',
                render: (r) => <Value v={r.rule_title || r.rule_id} href={`/console/alerts/${seg(r.alert_id)}`} />,
              },
              { key: 'severity', label: 'Severity' },
              { key: 'group_key', label: 'Key' },
              { key: 'event_count', label: 'Events', numeric: true },
              {
                key: 'status',
                label: 'Status',
                render: (r) => `${r.status}${r.resolution ? ` (${r.resolution})` : ''}`,
              },
              { key: 'assignee', label: 'Assignee' },
            ]}
          />
        </>
      )}
    </section>
  );
}
