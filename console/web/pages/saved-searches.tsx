/**
 * The Search page's saved searches: save the search on screen under a name (its filter, range, columns and
 * facets; the range as shown, or relative: "last 7 days" from whenever it is opened), the org's saved searches
 * to reopen (a link to the Search page's URL, which is the whole state), rename and delete. A name is another
 * analyst's text: it is shown through Value (bounded, invisible characters drawn), like any event value.
 */
import { useState } from 'preact/hooks';
import { lastMs, lastWords } from '../../saved-range.js';
import { ApiError, deleteJson, getJson, postJson, seg, withQuery, type Me } from '../api.js';
import { ErrorBox, Field, label, Loading, Table, useData, utc, Value } from '../ui.js';

type Range = { last: string } | { since: string; until: string };

interface Saved extends Record<string, unknown> {
  id: string;
  org: string;
  name: string;
  filter: string;
  range: Range;
  fields: string[];
  facets: string[];
  saved_by_name: string;
  saved_at: string;
}

/** The relative ranges offered, and "as shown" for the page's own dates. */
const RELATIVE: ReadonlyArray<string> = ['1h', '24h', '7d', '30d', '90d'];

const list = (s: string | undefined) => (s ? s.split(',').filter((x) => x !== '') : []);

/** The Search page's URL for a saved search: a relative range counts back from now. */
function openHref(s: Saved, now = Date.now()): string {
  const r = s.range;
  const range =
    'last' in r
      ? { since: new Date(now - (lastMs(r.last) ?? 86_400_000)).toISOString(), until: undefined }
      : { since: r.since, until: r.until };
  return withQuery('/console/search', {
    org: s.org,
    filter: s.filter,
    ...range,
    fields: s.fields.join(','),
    facets: s.facets.join(','),
  });
}

const rangeText = (r: Range) => ('last' in r ? lastWords(r.last) : `${utc(r.since)} – ${utc(r.until)}`);

function Rename({ me, s, onDone }: { me: Me; s: Saved; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState(s.name);
  const [error, setError] = useState<string | undefined>();
  if (!open)
    return (
      <button type="button" aria-label={`rename ${label(s.name, 80)}`} onClick={() => setOpen(true)}>
        Rename
      </button>
    );
  const id = `rename-${s.id}`;
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        postJson(`/console/api/saved-searches/${seg(s.id)}`, me, { name }).then(onDone, (err: unknown) =>
          setError(err instanceof ApiError ? err.message : String(err)),
        );
      }}
    >
      <Field id={id} label="New name">
        <input id={id} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </Field>
      <button type="submit">Rename</button>
      {error && <ErrorBox error={error} />}
    </form>
  );
}

export function SavedSearches({ me, org, p }: { me: Me; org: string; p: Record<string, string> }) {
  const [n, setN] = useState(0);
  const { data, error } = useData(
    () => getJson<{ saved: Saved[] }>('/console/api/saved-searches', { org }),
    `${org}#${n}`,
  );
  const reload = () => setN((x) => x + 1);
  const [name, setName] = useState('');
  const [range, setRange] = useState(p.since ? 'shown' : '24h');
  const [failed, setFailed] = useState<string | undefined>();
  /** A name the org has already: offered to overwrite. */
  const [taken, setTaken] = useState(false);
  const analyst = me.role === 'analyst';

  const save = (overwrite: boolean) => {
    setFailed(undefined);
    setTaken(false);
    const state = {
      org,
      name,
      filter: p.filter ?? '',
      range:
        range === 'shown'
          ? {
              since: p.since ?? new Date(Date.now() - 86_400_000).toISOString(),
              until: p.until ?? new Date().toISOString(),
            }
          : { last: range },
      fields: list(p.fields),
      facets: list(p.facets),
      ...(overwrite ? { overwrite: true } : {}),
    };
    postJson('/console/api/saved-searches', me, state).then(
      () => {
        setName('');
        reload();
      },
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 409) setTaken(true);
        setFailed(err instanceof ApiError ? err.message : String(err));
      },
    );
  };
  const remove = (s: Saved) =>
    deleteJson(`/console/api/saved-searches/${seg(s.id)}`, me).then(reload, (err: unknown) =>
      setFailed(err instanceof ApiError ? err.message : String(err)),
    );

  return (
    <section aria-label="Saved searches">
      {analyst && (
        <form
          class="filters"
          aria-label="Save this search"
          onSubmit={(e) => {
            e.preventDefault();
            save(false);
          }}
        >
          <Field id="f-save-name" label="Name">
            <input
              id="f-save-name"
              value={name}
              required
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
          </Field>
          <Field id="f-save-range" label="Range to save">
            <select id="f-save-range" value={range} onChange={(e) => setRange((e.target as HTMLSelectElement).value)}>
              <option value="shown">as shown</option>
              {RELATIVE.map((r) => (
                <option value={r}>{lastWords(r)}</option>
              ))}
            </select>
          </Field>
          <button type="submit">Save</button>
          {taken && (
            <button type="button" onClick={() => save(true)}>
              Overwrite it
            </button>
          )}
        </form>
      )}
      {failed && <ErrorBox error={failed} />}
      {error && <ErrorBox error={error} />}
      {!data && !error && <Loading what="the saved searches" />}
      {data && (
        <Table
          caption="Saved searches"
          empty="none yet"
          rows={data.saved}
          columns={[
            {
              key: 'name',
              label: 'Name',
              render: (s) => (
                <span
                  onClick={(e) => {
                    // A relative range counts back from the moment it is opened, not from when the list loaded.
                    if ((e.target as HTMLElement).closest('a')) {
                      e.preventDefault();
                      location.assign(openHref(s));
                    }
                  }}
                >
                  <Value v={s.name} href={openHref(s)} max={120} />
                </span>
              ),
            },
            { key: 'filter', label: 'Filter', render: (s) => <Value v={s.filter} max={200} /> },
            { key: 'range', label: 'Range', render: (s) => rangeText(s.range) },
            { key: 'saved_by_name', label: 'Saved by', render: (s) => <Value v={s.saved_by_name} max={80} /> },
            { key: 'saved_at', label: 'Saved', render: (s) => utc(s.saved_at) },
            ...(analyst
              ? [
                  {
                    key: 'change',
                    label: 'Change',
                    render: (s: Saved) => (
                      <>
                        <Rename me={me} s={s} onDone={reload} />{' '}
                        <button type="button" aria-label={`delete ${label(s.name, 80)}`} onClick={() => void remove(s)}>
                          Delete
                        </button>
                      </>
                    ),
                  },
                ]
              : []),
          ]}
        />
      )}
    </section>
  );
}
