/**
 * The alert list: filters, sort and page in the URL; pages of a snapshot the
 * server keeps (console/alert-list.ts), so the total holds while alerts
 * arrive and the newer ones are announced; select alerts and change them
 * together, or select all N matching and change them by filter on the server.
 */
import { useState } from 'preact/hooks';
import { keyTarget } from '../../display.js';
import { getJson, ipHref, params, seg, userHref, withQuery, type Me } from '../api.js';
import type { AlertStatus } from '../../lifecycle.js';
import { ChangeForm, type ByFilter } from './change-form.js';
import { ErrorBox, Field, Keep, label, Loading, RangeFields, Table, useData, utc, Value } from '../ui.js';

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

interface ListAnswer {
  alerts: AlertRow[];
  total: number;
  counts: Readonly<Record<AlertStatus, number>>;
  newer: number;
  as_of: string;
  offset: number;
  page: { first: string; next: string | null; prev: string | null };
  facets: Facet[];
  assignees: string[];
  rules: Record<string, { group_by: string[] | null }>;
}

/** The list's parameters the API takes; `assignee=none` (the page's "unassigned") is the API's `assignee=`. */
const LIST_PARAMS = ['org', 'rule', 'severity', 'status', 'assignee', 'q', 'since', 'until', 'sort', 'dir', 'limit'];
const FILTER_PARAMS = ['org', 'rule', 'severity', 'status', 'assignee', 'q', 'since', 'until'];

function apiParams(p: Record<string, string>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = p[n];
    if (v === undefined || v === '') continue;
    out[n] = n === 'assignee' && v === 'none' ? '' : v;
  }
  return out;
}

/** GET with every given parameter, empty ones too (the API's `assignee=` is a filter). */
function listUrl(q: Record<string, string>): string {
  return `/console/api/alerts?${new URLSearchParams(q)}`;
}

/**
 * An alert's key: the rule's group-by values, each a link to its user or IP
 * page when the rule's field says which (or, for a rule this process does not
 * know, when the value looks like an IP or a login), bounded, by reference
 * when long. A key that is not a list of values is shown as it is.
 */
export function KeyLinks({
  org,
  groupKey,
  fields,
}: {
  org: string;
  groupKey: string;
  fields: readonly string[] | null;
}) {
  let values: unknown;
  try {
    values = JSON.parse(groupKey);
  } catch {
    values = undefined;
  }
  if (!Array.isArray(values) || !values.every((v) => typeof v === 'string')) return <Value v={groupKey} />;
  return (
    <>
      {(values as string[]).map((v, i) => {
        const kind = keyTarget(fields?.[i], v);
        const href = kind === 'ip' ? ipHref(v, org) : kind === 'user' ? userHref(org, v) : undefined;
        return (
          <span class="key-part">
            {i > 0 ? ', ' : ''}
            <Value v={v} {...(href ? { href } : {})} />
          </span>
        );
      })}
    </>
  );
}

const SORT_LABELS: ReadonlyArray<[string, string]> = [
  ['time', 'Time'],
  ['severity', 'Severity'],
  ['count', 'Events'],
  ['status', 'Status'],
];

export function AlertsPage({ me }: { me: Me }) {
  const p = params();
  const { data, error, reload } = useData(
    () => getJson<ListAnswer>(listUrl({ ...apiParams(p, LIST_PARAMS), ...(p.page ? { page: p.page } : {}) })),
    location.search,
  );
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [all, setAll] = useState(false);
  const toggle = (id: string) => {
    setAll(false);
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  };
  const select = (title: string, name: string, options: ReadonlyArray<[string, string]>, any = 'any') => (
    <Field id={`f-${name}`} label={title}>
      <select id={`f-${name}`} name={name} value={p[name] ?? ''}>
        <option value="">{any}</option>
        {options.map(([v, t]) => (
          <option value={v}>{label(t, 100)}</option>
        ))}
      </select>
    </Field>
  );
  const sort = p.sort || 'time';
  const dir = p.dir || 'desc';
  /** This page's URL with `changes`; a new filter or sort starts a new snapshot (no page). */
  const here = (changes: Record<string, string | undefined>) =>
    withQuery('/console/alerts', { ...p, page: undefined, ...changes });
  const sortHeader = (by: string, text: string) => {
    const active = sort === by;
    const next = active && dir === 'desc' ? 'asc' : 'desc';
    return (
      <a
        href={here({ sort: by, dir: next })}
        aria-label={`Sort by ${text.toLowerCase()}, ${next === 'desc' ? 'descending' : 'ascending'}`}
        aria-current={active ? 'true' : undefined}
      >
        {text}
        {active ? (dir === 'desc' ? ' ↓' : ' ↑') : ''}
      </a>
    );
  };
  const assignees: Array<[string, string]> = [
    ['mine', 'mine'],
    ['none', 'unassigned'],
    ...(data?.assignees ?? []).map((a): [string, string] => [a, a]),
  ];
  if (p.assignee && !assignees.some(([v]) => v === p.assignee)) assignees.push([p.assignee, p.assignee]);
  const byFilter: ByFilter | undefined =
    data && all ? { filter: { ...apiParams(p, FILTER_PARAMS), as_of: data.as_of }, expected: data.total } : undefined;
  const from = data ? data.offset + 1 : 0;
  const to = data ? data.offset + data.alerts.length : 0;
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
        {select('Assignee', 'assignee', assignees)}
        <Field id="f-q" label="Text" help="in the rule, its title or the key">
          <input id="f-q" name="q" value={p.q ?? ''} maxLength={200} aria-describedby="f-q-help" />
        </Field>
        <Field id="f-sort" label="Sort by">
          <select id="f-sort" name="sort" value={sort}>
            {SORT_LABELS.map(([v, t]) => (
              <option value={v}>{t}</option>
            ))}
          </select>
        </Field>
        <Field id="f-dir" label="Order">
          <select id="f-dir" name="dir" value={dir}>
            <option value="desc">descending</option>
            <option value="asc">ascending</option>
          </select>
        </Field>
        <Keep p={p} names={['limit']} />
        <button type="submit">Filter</button>
      </form>
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="alerts" />}
      {data && (
        <>
          <p class="list-status" role="status">
            {data.total === 0
              ? 'No alerts match'
              : `Alerts ${from.toLocaleString('en')}–${to.toLocaleString('en')} of ${data.total.toLocaleString('en')}`}
            , as of {utc(data.as_of)}.
            {data.newer > 0 && (
              <>
                {' '}
                <a href={here({})}>
                  {data.newer.toLocaleString('en')} new alert{data.newer === 1 ? '' : 's'} since: show
                </a>
              </>
            )}
          </p>
          {me.role === 'analyst' && (
            <>
              {data.total > data.alerts.length && (
                <p>
                  {all ? (
                    <button type="button" onClick={() => setAll(false)}>
                      Clear the selection of all {data.total.toLocaleString('en')}
                    </button>
                  ) : (
                    <button
                      type="button"
                      onClick={() => {
                        setSelected(new Set());
                        setAll(true);
                      }}
                    >
                      Select all {data.total.toLocaleString('en')} matching
                    </button>
                  )}
                </p>
              )}
              <ChangeForm
                me={me}
                ids={all ? [] : [...selected]}
                statuses={
                  all
                    ? (Object.keys(data.counts) as AlertStatus[]).filter((s) => data.counts[s] > 0)
                    : data.alerts.filter((r) => selected.has(r.alert_id)).map((r) => r.status)
                }
                {...(byFilter ? { byFilter } : {})}
                onDone={() => {
                  setSelected(new Set());
                  setAll(false);
                  reload();
                }}
              />
            </>
          )}
          <Table
            caption={`Alerts ${from}–${to} of ${data.total}`}
            rows={data.alerts}
            empty="none match the filter."
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
                          checked={all || selected.has(r.alert_id)}
                          disabled={all}
                          onChange={() => toggle(r.alert_id)}
                        />
                      ),
                    },
                  ]
                : []),
              {
                key: 'event_time',
                label: 'Time',
                header: sortHeader('time', 'Time'),
                render: (r) => utc(r.event_time),
              },
              { key: 'org', label: 'Org' },
              {
                key: 'rule_title',
                label: 'Rule',
                render: (r) => <Value v={r.rule_title || r.rule_id} href={`/console/alerts/${seg(r.alert_id)}`} />,
              },
              { key: 'severity', label: 'Severity', header: sortHeader('severity', 'Severity') },
              {
                key: 'group_key',
                label: 'Key',
                render: (r) => (
                  <KeyLinks org={r.org} groupKey={r.group_key} fields={data.rules[r.rule_id]?.group_by ?? null} />
                ),
              },
              { key: 'event_count', label: 'Events', numeric: true, header: sortHeader('count', 'Events') },
              {
                key: 'status',
                label: 'Status',
                header: sortHeader('status', 'Status'),
                render: (r) => `${r.status}${r.resolution ? ` (${r.resolution})` : ''}`,
              },
              { key: 'assignee', label: 'Assignee' },
            ]}
          />
          <nav class="pages" aria-label="Pages">
            {data.page.prev ? <a href={here({ page: data.page.first })}>First page</a> : null}
            {data.page.prev ? (
              <a href={here({ page: data.page.prev })} rel="prev">
                Previous page
              </a>
            ) : null}
            {data.page.next ? (
              <a href={here({ page: data.page.next })} rel="next">
                Next page
              </a>
            ) : null}
          </nav>
        </>
      )}
    </section>
  );
}
