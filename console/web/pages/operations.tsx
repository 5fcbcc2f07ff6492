/** `hooklog status` and `hooklog coverage` as pages, for the orgs you may see. */
import { getJson, params, type Me } from '../api.js';
import { Chart, chartOf } from '../chart.js';
import { ErrorBox, Field, label, Loading, RangeForm, Table, useData, Value } from '../ui.js';

export function StatusPage() {
  const { data, error } = useData(
    () => getJson<{ status: Array<Record<string, unknown>> }>('/console/api/status'),
    'status',
  );
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="status" />;
  const cols = [
    'org',
    'source',
    'mode',
    'last_event_at',
    'last_success_age_s',
    'cursor_age_s',
    'poller_lag_s',
    'sink_lag_records',
    'dead_letters_1h',
    'hook_failures_1h',
    'late_events',
  ];
  return (
    <section>
      <h1>Status</h1>
      <p class="muted">
        Checked at <Value v={data.status[0]?.checked_at ?? '-'} />. A poller's last success stays recent while its org
        is quiet (its cursor age grows: that is the org); an old last success is a stuck poller. Mode reconcile is the
        System Log watch beside an org's event hooks.
      </p>
      <Table
        caption="Per org and source: is it arriving and landing?"
        rows={data.status}
        columns={cols.map((c) => ({
          key: c,
          label: c,
          render: (r: Record<string, unknown>) => <Value v={r[c] ?? '-'} />,
        }))}
      />
    </section>
  );
}

interface Coverage {
  totals: Record<string, unknown>;
  hook_types: { from: string; types: string[] };
  left_out: Array<{ event_type: string; events: number }>;
  coverage: { columns: string[]; rows: Array<Record<string, unknown>> };
  lost: { columns: string[]; rows: Array<Record<string, unknown>> };
}

export function CoveragePage({ me }: { me: Me }) {
  const p = params();
  const org = p.org;
  const { data, error } = useData(
    () => (org ? getJson<Coverage>('/console/api/coverage', p) : Promise.resolve(undefined)),
    location.search,
  );
  const chart = data ? chartOf(data.coverage.columns, data.coverage.rows) : null;
  return (
    <section>
      <h1>Hook coverage</h1>
      <RangeForm p={p}>
        <Field id="f-org" label="Org">
          <select id="f-org" name="org" value={org ?? me.orgs[0] ?? ''}>
            {me.orgs.map((o) => (
              <option value={o}>{o}</option>
            ))}
          </select>
        </Field>
      </RangeForm>
      {!org && <p class="muted">Pick an org.</p>}
      {error && <ErrorBox error={error} />}
      {org && !data && !error && <Loading what="coverage" />}
      {data && (
        <>
          <dl class="facts">
            {Object.entries(data.totals).map(([k, v]) => (
              <>
                <dt>{label(k, 100)}</dt>
                <dd>
                  <Value v={v} />
                </dd>
              </>
            ))}
          </dl>
          <p class="muted">
            Counted: the {data.hook_types.types.length} event type(s) the org's hooks{' '}
            {data.hook_types.from === 'register' ? 'subscribe to (register:) or delivered' : 'delivered in the range'}.
            {data.left_out.length > 0 &&
              ` Left out (no hook of the org carries them): ${data.left_out
                .slice(0, 20)
                .map((l) => `${l.event_type} (${l.events})`)
                .join(', ')}${data.left_out.length > 20 ? `, and ${data.left_out.length - 20} more` : ''}.`}
          </p>
          {chart && <Chart title="Events by path" data={chart} />}
          <Table
            caption="Per hour and event type"
            rows={data.coverage.rows}
            columns={data.coverage.columns.map((c) => ({ key: c, label: c }))}
          />
          <Table
            caption="Lost deliveries"
            rows={data.lost.rows}
            columns={data.lost.columns.map((c) => ({ key: c, label: c }))}
          />
        </>
      )}
    </section>
  );
}
