/** The named query library: a form per query (its parameters, in the URL), results as a table, a chart and CSV. */
import { getJson, params, seg, withQuery, type Me } from '../api.js';
import { Chart, chartOf } from '../chart.js';
import { ErrorBox, Field, label, Loading, Table, useData } from '../ui.js';

interface Param {
  name: string;
  type: string;
  required: boolean;
  default?: string | number;
  description: string;
}
interface Query {
  name: string;
  area: string;
  description: string;
  params: Param[];
}

const list = () => getJson<{ queries: Query[] }>('/console/api/queries');

export function QueriesPage() {
  const { data, error } = useData(list, 'queries');
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="queries" />;
  const areas = [...new Set(data.queries.map((q) => q.area))];
  return (
    <section>
      <h1>Queries</h1>
      {areas.map((area) => (
        <>
          <h2>{area}</h2>
          <ul>
            {data.queries
              .filter((q) => q.area === area)
              .map((q) => (
                <li>
                  <a href={`/console/queries/${seg(q.name)}`}>{q.name}</a> — {q.description}
                </li>
              ))}
          </ul>
        </>
      ))}
    </section>
  );
}

function Result({ name, p }: { name: string; p: Record<string, string> }) {
  const { data, error } = useData(
    () => getJson<{ columns: string[]; rows: Array<Record<string, unknown>> }>(`/console/api/queries/${seg(name)}`, p),
    location.search,
  );
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="results" />;
  const chart = chartOf(data.columns, data.rows);
  return (
    <>
      <p>
        <a href={withQuery(`/console/api/queries/${seg(name)}/csv`, p)} download={`${name}.csv`}>
          Export CSV
        </a>
      </p>
      {chart ? <Chart title={name} data={chart} /> : <p class="muted">No chart for this result (no numeric column).</p>}
      <Table
        caption={`${data.rows.length} rows`}
        rows={data.rows}
        columns={data.columns.map((c) => ({ key: c, label: c }))}
      />
    </>
  );
}

export function QueryPage({ name, me }: { name: string; me: Me }) {
  const p = params();
  const { data, error } = useData(list, 'queries');
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="the query" />;
  const q = data.queries.find((x) => x.name === name);
  if (!q) return <ErrorBox error={`No query named ${name}.`} />;
  const day = 86_400_000;
  const hint: Record<string, string> = {
    since: new Date(Date.now() - 7 * day).toISOString().slice(0, 19) + 'Z',
    until: new Date().toISOString().slice(0, 19) + 'Z',
  };
  return (
    <section>
      <h1>{label(q.name)}</h1>
      <p>{label(q.description, 2000)}</p>
      <form method="get" class="filters" aria-label={`Parameters of ${q.name}`}>
        {q.params.map((param) => {
          const id = `param-${param.name}`;
          const value = p[param.name] ?? (param.name in hint ? hint[param.name] : '');
          return (
            <Field id={id} label={`${param.name}${param.required ? ' (required)' : ''}`} help={param.description}>
              {param.name === 'org' ? (
                <select id={id} name="org" value={p.org ?? me.orgs[0] ?? ''} aria-describedby={`${id}-help`}>
                  {me.orgs.map((o) => (
                    <option value={o}>{o}</option>
                  ))}
                </select>
              ) : (
                <input
                  id={id}
                  name={param.name}
                  value={value}
                  required={param.required}
                  placeholder={param.default === undefined ? param.type : String(param.default)}
                  aria-describedby={`${id}-help`}
                />
              )}
            </Field>
          );
        })}
        <button type="submit">Run</button>
      </form>
      {p.org && <Result name={name} p={p} />}
    </section>
  );
}
