/**
 * Search: a filter in the rules' language over one org's events (analytics/search/ through
 * /console/api/search). The whole state is the URL (filter, org, range, fields, page), so a search is a
 * link to bookmark or share; a facet value adds `field eq value` (or its negation) to the filter, a
 * histogram bar zooms the range to itself. Every value is shown through Value (bounded, invisible
 * characters drawn).
 */
import { getJson, params, withQuery, type Me } from '../api.js';
import { Chart, epochS } from '../chart.js';
import { ErrorBox, Field, Keep, label, Loading, RangeFields, Table, useData } from '../ui.js';
import { Raw } from './events.js';
import { MakeRule, MARK_PARAMS, MarkButtons, useMarks, withoutMarks } from './make-rule.js';
import { SavedSearches } from './saved-searches.js';

interface SearchData {
  columns: string[];
  rows: Array<Record<string, unknown>>;
  next?: string;
  histogram?: { bucketSeconds: number; buckets: Array<{ t: string; n: number }> };
  facets?: Array<{ field: string; values: Array<{ value: string; n: number }> }>;
}

/** Longer values are shown but not offered as a filter: the URL would carry them whole. */
const MAX_FILTER_VALUE = 1000;

const href = (p: Record<string, string>, over: Record<string, string | undefined>) =>
  withQuery('/console/search', { ...p, after: undefined, ...over });

/** The filter with `field eq value` added (or, excluding, its negation). */
function narrowed(filter: string, field: string, value: string, exclude: boolean): string {
  const cond = `${field} eq ${JSON.stringify(value)}`;
  const add = exclude ? `not (${cond})` : cond;
  return filter.trim() === '' ? add : `(${filter}) and ${add}`;
}

function Facet({ f, p }: { f: NonNullable<SearchData['facets']>[number]; p: Record<string, string> }) {
  const filter = p.filter ?? '';
  return (
    <Table
      caption={f.field}
      rows={f.values.map((v) => ({ ...v }))}
      empty="no values"
      columns={[
        { key: 'value', label: 'Value' },
        { key: 'n', label: 'Events', numeric: true },
        {
          key: 'narrow',
          label: 'Filter',
          render: (v) =>
            v.value.length > MAX_FILTER_VALUE ? (
              ''
            ) : (
              <>
                <a
                  href={href(p, { filter: narrowed(filter, f.field, v.value, false) })}
                  aria-label={`only ${label(f.field, 60)} = ${label(v.value, 100)}`}
                >
                  +
                </a>{' '}
                <a
                  href={href(p, { filter: narrowed(filter, f.field, v.value, true) })}
                  aria-label={`not ${label(f.field, 60)} = ${label(v.value, 100)}`}
                >
                  −
                </a>
              </>
            ),
        },
      ]}
    />
  );
}

export function SearchPage({ me }: { me: Me }) {
  const p = params();
  const org = p.org ?? me.orgs[0] ?? '';
  const q = { ...p, org };
  const search = withoutMarks(q);
  const { data, error } = useData(() => getJson<SearchData>('/console/api/search', search), JSON.stringify(search));
  const marking = useMarks(p);
  const zoom = (i: number) => {
    const b = data?.histogram?.buckets[i];
    if (!b || !data?.histogram) return;
    const until = new Date(Date.parse(b.t) + data.histogram.bucketSeconds * 1000).toISOString();
    location.assign(href(q, { since: b.t, until }));
  };
  return (
    <section>
      <h1>Search</h1>
      <form method="get" class="filters" aria-label="Search">
        <Field id="f-filter" label="Filter" help='as rules write it: eventType eq "user.session.start" and …'>
          <input id="f-filter" name="filter" value={p.filter ?? ''} size={80} aria-describedby="f-filter-help" />
        </Field>
        <Field id="f-org" label="Org">
          <input id="f-org" name="org" value={org} />
        </Field>
        <RangeFields p={p} sinceHint="1 day ago" />
        <Field id="f-fields" label="Fields" help="comma-separated, e.g. eventType,actor.alternateId">
          <input id="f-fields" name="fields" value={p.fields ?? ''} aria-describedby="f-fields-help" />
        </Field>
        <Keep p={p} names={['facets', 'limit', ...MARK_PARAMS]} />
        <button type="submit">Search</button>
      </form>
      <SavedSearches me={me} org={org} p={p} />
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="the search" />}
      {data && (
        <>
          {data.histogram && (
            <Chart
              title="Matching events (click a bar to zoom)"
              data={{
                x: data.histogram.buckets.map((b) => epochS(b.t)),
                series: [{ label: 'events', values: data.histogram.buckets.map((b) => b.n) }],
              }}
              onPick={zoom}
            />
          )}
          <p>
            <a href={withQuery('/console/api/search/csv', { ...q, after: undefined })} download="search.csv">
              Export CSV
            </a>
            {p.after && (
              <>
                {' · '}
                <a href={href(q, {})}>First page</a>
              </>
            )}
            {data.next && (
              <>
                {' · '}
                <a href={href(q, { after: data.next })}>Next page</a>
              </>
            )}
          </p>
          <Table
            caption={`${data.rows.length} events (newest first)`}
            rows={data.rows}
            columns={[
              ...data.columns.map((c) => ({ key: c, label: c })),
              {
                key: 'raw',
                label: 'Raw',
                render: (r: Record<string, unknown>) => <Raw org={String(r.org ?? org)} uuid={String(r.uuid)} />,
              },
              { key: 'mark', label: 'Mark', render: (r) => <MarkButtons uuid={String(r.uuid)} m={marking} /> },
            ]}
          />
          <MakeRule
            org={org}
            filter={p.filter ?? ''}
            fields={[...data.columns, ...(data.facets ?? []).map((f) => f.field)]}
            m={marking}
          />
          <div class="grid">
            {(data.facets ?? []).map((f) => (
              <Facet f={f} p={q} />
            ))}
          </div>
        </>
      )}
    </section>
  );
}
