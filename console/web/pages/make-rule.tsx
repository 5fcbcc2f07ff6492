/**
 * From a search to a rule: the analyst marks events of the Search page as should-alert or should-not-alert,
 * picks a group-by (and a threshold and window for it), names the rule, and "Make a rule" downloads
 * `<name>.yaml` from /console/api/search/rule — a hooklog rule with the page's filter and one test case per
 * marked event, which the server has run (`hooklog rules test --cases` passes on it) before answering; marks
 * that contradict the filter come back as the refusal naming the event. Nothing is deployed. The marks are
 * the page's own state (the events shown), not the URL's: they are a draft for a download, not a search.
 */
import { useState } from 'preact/hooks';
import { ApiError, getFile } from '../api.js';
import { ErrorBox, Field, label } from '../ui.js';

export type Mark = 'alert' | 'quiet';

/** The URL's parameters that hold the marks (comma-separated event ids): the search itself ignores them. */
export const MARK_PARAMS: readonly Mark[] = ['alert', 'quiet'];

/** The page's parameters without the marks: what the search is (its data does not change with a mark). */
export function withoutMarks(p: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(p).filter(([k]) => !(MARK_PARAMS as readonly string[]).includes(k)));
}

export interface Marking {
  readonly marks: ReadonlyMap<string, Mark>;
  /** Marks `uuid` so, or clears the mark when it has it already. */
  readonly toggle: (uuid: string, mark: Mark) => void;
}

function marksOf(p: Record<string, string>): Map<string, Mark> {
  const m = new Map<string, Mark>();
  for (const mark of MARK_PARAMS) for (const u of (p[mark] ?? '').split(',')) if (u !== '') m.set(u, mark);
  return m;
}

/**
 * The marks live in the URL (`alert=…&quiet=…`) like the rest of the page's state, so they stay while the
 * analyst narrows the filter, zooms or pages (the form and the links keep them), and a marked search is a link.
 * A mark replaces the URL in place (no new search, no history entry).
 */
export function useMarks(p: Record<string, string>): Marking {
  const [, rerender] = useState(0);
  const marks = marksOf(p);
  const toggle = (uuid: string, mark: Mark) => {
    const next = marksOf(Object.fromEntries(new URLSearchParams(location.search)));
    if (next.get(uuid) === mark) next.delete(uuid);
    else next.set(uuid, mark);
    const q = new URLSearchParams(location.search);
    for (const k of MARK_PARAMS) {
      const ids = [...next].filter(([, x]) => x === k).map(([u]) => u);
      if (ids.length) q.set(k, ids.join(','));
      else q.delete(k);
    }
    history.replaceState(null, '', `${location.pathname}?${q.toString()}`);
    rerender((n) => n + 1);
  };
  return { marks, toggle };
}

/** An event row's two mark buttons (pressed when marked). */
export function MarkButtons({ uuid, m }: { uuid: string; m: Marking }) {
  const now = m.marks.get(uuid);
  const button = (mark: Mark, text: string, name: string) => (
    <button
      type="button"
      class="mark-button"
      aria-pressed={now === mark}
      aria-label={`${name}: event ${label(uuid, 80)}`}
      onClick={() => m.toggle(uuid, mark)}
    >
      {text}
    </button>
  );
  return (
    <>
      {button('alert', 'alert', 'should alert')} {button('quiet', 'quiet', 'should not alert')}
    </>
  );
}

/** Fields a rule may group by: the page's columns and facets (never the event's time or id). */
function groupable(fields: readonly string[]): string[] {
  return [...new Set(fields)].filter((f) => !['published', 'uuid', 'org', 'displayMessage'].includes(f));
}

export function MakeRule({
  org,
  filter,
  fields,
  m,
}: {
  org: string;
  filter: string;
  fields: readonly string[];
  m: Marking;
}) {
  const [name, setName] = useState('');
  const [groupBy, setGroupBy] = useState('');
  const [threshold, setThreshold] = useState('');
  const [windowMinutes, setWindowMinutes] = useState('');
  const [state, setState] = useState<{ error?: string; made?: string; busy?: boolean }>({});
  const marked = (mark: Mark) => [...m.marks].filter(([, x]) => x === mark).map(([u]) => u);
  const alert = marked('alert');
  const quiet = marked('quiet');
  const make = async (e: Event) => {
    e.preventDefault();
    setState({ busy: true });
    try {
      const blob = await getFile('/console/api/search/rule', {
        org,
        filter,
        name,
        group_by: groupBy,
        threshold,
        window: windowMinutes,
        alert: alert.join(','),
        quiet: quiet.join(','),
      });
      // The server checked the name: a rule id ([A-Za-z0-9._:-]), so it is a file name as it is.
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `${name}.yaml`;
      document.body.append(a);
      a.click();
      a.remove();
      // Revoked once the browser has taken the download (revoking at once may cancel it).
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      setState({ made: `${name}.yaml` });
    } catch (err) {
      setState({ error: err instanceof ApiError ? err.message : String(err) });
    }
  };
  return (
    <form class="filters make-rule" aria-label="Make a rule" onSubmit={make}>
      <h2>Make a rule</h2>
      <p class="muted">
        {alert.length} marked should alert, {quiet.length} should not (mark events with the buttons in the table). The
        rule is downloaded with a test case per marked event, not deployed.
      </p>
      <Field id="r-name" label="Rule id" help="letters, digits and . _ : -, e.g. acme.signin.failures">
        <input
          id="r-name"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
          aria-describedby="r-name-help"
          size={40}
        />
      </Field>
      <Field id="r-group" label="Group by">
        <select id="r-group" value={groupBy} onChange={(e) => setGroupBy(e.currentTarget.value)}>
          <option value="">(none: a match rule, one alert per event)</option>
          {groupable(fields).map((f) => (
            <option value={f}>{label(f, 100)}</option>
          ))}
        </select>
      </Field>
      <Field id="r-threshold" label="Threshold" help="events per group within the window (default 5 with a group-by)">
        <input
          id="r-threshold"
          inputMode="numeric"
          value={threshold}
          onInput={(e) => setThreshold(e.currentTarget.value)}
          aria-describedby="r-threshold-help"
          size={6}
        />
      </Field>
      <Field id="r-window" label="Window (minutes)" help="default 10">
        <input
          id="r-window"
          inputMode="numeric"
          value={windowMinutes}
          onInput={(e) => setWindowMinutes(e.currentTarget.value)}
          aria-describedby="r-window-help"
          size={6}
        />
      </Field>
      <button type="submit" disabled={state.busy}>
        Make a rule
      </button>
      {state.made && (
        <p role="status">
          Downloaded {state.made}: test it with <code>hooklog rules test --cases {state.made}</code>
        </p>
      )}
      {state.error && <ErrorBox error={state.error} />}
    </form>
  );
}
