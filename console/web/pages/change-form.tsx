/**
 * Acknowledge, close (with a resolution and a note), reopen, assign or
 * comment: one alert or many. Only the actions every selected alert can take
 * are offered (../../lifecycle.ts, the server's own rules); a refusal shows
 * the server's reason for each alert it refused.
 */
import { useState } from 'preact/hooks';
import { offeredActions, type Action, type AlertStatus } from '../../lifecycle.js';
import { ApiError, postJson, type Me } from '../api.js';
import { ErrorBox, Field } from '../ui.js';

const ACTION_LABELS: Readonly<Record<Action, string>> = {
  acknowledge: 'Acknowledge',
  close: 'Close',
  reopen: 'Reopen',
  assign: 'Assign',
  comment: 'Comment',
};

/**
 * The message of a failed change: the server's error, and for a refusal each
 * distinct reason with its count (a change by filter sends the counts in
 * `reasons`, and only some of the alerts in `refused`).
 */
export function refusalText(err: unknown): string {
  if (!(err instanceof ApiError)) return String(err);
  const refused = Array.isArray(err.body.refused) ? (err.body.refused as Array<{ why?: unknown }>) : [];
  const counts = new Map<string, number>();
  if (Array.isArray(err.body.reasons))
    for (const r of err.body.reasons as Array<{ why?: unknown; n?: unknown }>) counts.set(String(r.why), Number(r.n));
  else for (const r of refused) counts.set(String(r.why), (counts.get(String(r.why)) ?? 0) + 1);
  if (counts.size === 0) return err.message;
  // Out of how many the change asked for (a change by filter says; otherwise the refused are all listed).
  const of = typeof err.body.asked === 'number' ? err.body.asked : refused.length;
  const reasons = [...counts].map(([why, n]) =>
    of > 1 ? `${why} (${n.toLocaleString('en')} of ${of.toLocaleString('en')})` : why,
  );
  return `${err.message}: ${reasons.join('; ')}`;
}

/** A change by filter: the list's filter and snapshot, and the count the analyst is shown and confirms. */
export interface ByFilter {
  readonly filter: Readonly<Record<string, string>>;
  readonly expected: number;
}

export function ChangeForm({
  me,
  ids,
  statuses,
  byFilter,
  onDone,
}: {
  me: Me;
  ids: readonly string[];
  /** The selected alerts' statuses, as the page last read them (with `byFilter`: the statuses among them). */
  statuses: readonly AlertStatus[];
  /** Change every alert the list's filter matches, on the server, after the analyst confirms the count. */
  byFilter?: ByFilter;
  onDone: () => void;
}) {
  const offered = offeredActions(statuses);
  const [chosen, setAction] = useState<Action>('acknowledge');
  // The chosen action, or the first one offered when the selection no longer takes it.
  const action: Action = offered.includes(chosen) ? chosen : (offered[0] ?? chosen);
  const [resolution, setResolution] = useState('false_positive');
  const [assignee, setAssignee] = useState('');
  const [note, setNote] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  /** A change by filter waits for this: the count, confirmed. */
  const [confirming, setConfirming] = useState(false);
  const count = byFilter ? byFilter.expected : ids.length;
  const submit = async (e: Event) => {
    e.preventDefault();
    if (byFilter && !confirming) {
      setConfirming(true);
      return;
    }
    setConfirming(false);
    setBusy(true);
    setError(undefined);
    try {
      await postJson('/console/api/alerts/changes', me, {
        ...(byFilter ? { filter: byFilter.filter, expected: byFilter.expected } : { alert_ids: ids }),
        action,
        ...(action === 'close' ? { resolution } : {}),
        ...(action === 'assign' ? { assignee } : {}),
        ...(note ? { note } : {}),
      });
      setNote('');
      onDone();
    } catch (err) {
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="change" onSubmit={submit} aria-label="Change alerts">
      <fieldset disabled={busy || count === 0}>
        <legend>
          {byFilter
            ? `Change all ${count.toLocaleString('en')} matching alerts`
            : `Change ${count} selected alert${count === 1 ? '' : 's'}`}
        </legend>
        <Field id="c-action" label="Action">
          <select
            id="c-action"
            name="action"
            value={action}
            onChange={(e) => setAction(e.currentTarget.value as Action)}
          >
            {offered.map((a) => (
              <option value={a}>{ACTION_LABELS[a]}</option>
            ))}
          </select>
        </Field>
        {action === 'close' && (
          <Field id="c-resolution" label="Resolution">
            <select
              id="c-resolution"
              name="resolution"
              value={resolution}
              onChange={(e) => setResolution(e.currentTarget.value)}
            >
              <option value="true_positive">True positive</option>
              <option value="false_positive">False positive</option>
              <option value="benign">Benign</option>
            </select>
          </Field>
        )}
        {action === 'assign' && (
          <Field id="c-assignee" label="Assignee">
            <input
              id="c-assignee"
              name="assignee"
              value={assignee}
              onInput={(e) => setAssignee(e.currentTarget.value)}
            />
          </Field>
        )}
        <Field id="c-note" label="Note">
          <input
            id="c-note"
            name="note"
            value={note}
            maxLength={4000}
            onInput={(e) => setNote(e.currentTarget.value)}
          />
        </Field>
        {confirming && byFilter ? (
          <p class="confirm" role="alert">
            {ACTION_LABELS[action]} all {count.toLocaleString('en')} alerts that match this filter?{' '}
            <button type="submit">Confirm: change {count.toLocaleString('en')} alerts</button>{' '}
            <button type="button" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </p>
        ) : (
          <button type="submit">{byFilter ? `Apply to all ${count.toLocaleString('en')}` : 'Apply'}</button>
        )}
      </fieldset>
      {error && <ErrorBox error={error} />}
    </form>
  );
}
