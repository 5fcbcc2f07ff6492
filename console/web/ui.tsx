/**
 * Small building blocks. Every value from the store is rendered as a text
 * node or an attribute value (Preact escapes both); nothing is ever inserted
 * as HTML, and links are built only from console paths. A value is shown
 * through `Value` (or `label`): bounded and with its invisible characters
 * drawn (../display.ts), the whole of it on request.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { label, pieces, shown, text, visible } from '../display.js';
import { ApiError } from './api.js';

export { label, text };

/** Loads data once per key; the page re-renders with it, or with the error. */
export function useData<T>(load: () => Promise<T>, key: string): { data?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState({});
    load().then(
      (data) => live && setState({ data }),
      (err: unknown) => live && setState({ error: err instanceof ApiError ? err.message : String(err) }),
    );
    return () => {
      live = false;
    };
  }, [key, n]);
  return { ...state, reload: () => setN((x) => x + 1) };
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function ErrorBox({ error }: { error: string }) {
  return (
    <p class="error" role="alert">
      {label(error, 1000)}
    </p>
  );
}

/** Visible text with its marks (`⟨U+202E⟩`) set apart, so a mark does not read as the value's own text. */
function Marked({ s }: { s: string }) {
  if (!s.includes('⟨')) return <>{s}</>;
  return (
    <>{s.split(/(⟨U\+[0-9A-F]{4,6}⟩)/).map((part, i) => (i % 2 === 1 ? <span class="mark">{part}</span> : part))}</>
  );
}

/**
 * The whole value, drawn visibly (exact: `fromVisible` of the box's text gives
 * it back), in a scrolling box of its own, in pieces laid out only when
 * scrolled to. A piece starts a new line on screen; a line break of the value
 * itself is drawn as ⟨U+000A⟩, so the two are never confused.
 */
export function FullValue({ v }: { v: unknown }) {
  return (
    <pre class="full">
      {pieces(visible(text(v))).map((p) => (
        <span>{p}</span>
      ))}
    </pre>
  );
}

/**
 * A value as a page shows it: at most MAX_SHOWN characters (a 100 KB login
 * laid out in full took the alert list 19–46 s), invisible characters drawn,
 * a link when `href` is given, and a button that shows the whole value.
 */
export function Value({ v, href, max }: { v: unknown; href?: string; max?: number }) {
  const [open, setOpen] = useState(false);
  const s = shown(v, max);
  // <bdi>: a right-to-left value does not reorder the text around it (the heading's "User", the "…").
  const body = (
    <>
      <bdi>
        <Marked s={s.text} />
      </bdi>
      {s.clipped ? '…' : ''}
    </>
  );
  const head = href ? <a href={href}>{body}</a> : body;
  if (!s.clipped) return head;
  return (
    <>
      {head}{' '}
      <button type="button" class="more" aria-expanded={open} onClick={() => setOpen((o) => !o)}>
        {open ? 'Show less' : `Show all ${s.length.toLocaleString('en')} characters`}
      </button>
      {open && <FullValue v={v} />}
    </>
  );
}

export interface Column<R> {
  readonly key: string;
  readonly label: string;
  /** How to show the cell; default: its text. A link for numbers that have events behind them. */
  readonly render?: (row: R) => ComponentChildren;
  readonly numeric?: boolean;
  /** The column's heading when it is more than its label (a sort link). */
  readonly header?: ComponentChildren;
}

export function Table<R extends Record<string, unknown>>({
  rows,
  columns,
  caption,
  empty = 'Nothing in this range.',
}: {
  rows: readonly R[];
  columns: ReadonlyArray<Column<R>>;
  caption: string;
  empty?: string;
}) {
  if (rows.length === 0)
    return (
      <p class="muted">
        {caption}: {empty}
      </p>
    );
  return (
    <div class="table-wrap">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.numeric ? 'num' : undefined}>
                {c.header ?? label(c.label, 100)}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              {columns.map((c) => (
                <td class={c.numeric ? 'num' : undefined}>{c.render ? c.render(r) : <Value v={r[c.key]} />}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A labelled control: the label names exactly the control (for/id), so assistive tech reads the label alone. */
export function Field({
  id,
  label,
  children,
  help,
}: {
  id: string;
  label: string;
  children: ComponentChildren;
  help?: string;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {help && (
        <span id={`${id}-help`} class="help">
          {help}
        </span>
      )}
    </div>
  );
}

/** The time range inputs every data page has (ISO-8601 text). */
export function RangeFields({ p, sinceHint = '7 days ago' }: { p: Record<string, string>; sinceHint?: string }) {
  return (
    <>
      <Field id="f-since" label="Since">
        <input id="f-since" name="since" value={p.since ?? ''} placeholder={sinceHint} />
      </Field>
      <Field id="f-until" label="Until">
        <input id="f-until" name="until" value={p.until ?? ''} placeholder="now" />
      </Field>
    </>
  );
}

/** The time range form: GET, so the range lives in the URL. */
export function RangeForm({ p, children }: { p: Record<string, string>; children?: ComponentChildren }) {
  return (
    <form method="get" class="filters" aria-label="Time range">
      {children}
      <RangeFields p={p} />
      <button type="submit">Show</button>
    </form>
  );
}

/**
 * A time from the store (ClickHouse `2026-01-05 10:00:00.123`, or ISO-8601),
 * always UTC, shown with its zone: `2026-01-05 10:00:00 UTC`.
 */
export function utc(t: string | null | undefined): string {
  if (!t) return '';
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(t) ? t : `${t.replace(' ', 'T')}Z`);
  if (Number.isNaN(ms)) return t;
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** Hidden inputs that keep the URL's other parameters when a form is submitted. */
export function Keep({ p, names }: { p: Record<string, string>; names: readonly string[] }) {
  return <>{names.map((n) => (p[n] !== undefined ? <input type="hidden" name={n} value={p[n]} /> : null))}</>;
}
