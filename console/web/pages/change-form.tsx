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

/** The message of a failed change: the server's error, and for a refusal each distinct reason with its count. */
export function refusalText(err: unknown): string {
  if (!(err instanceof ApiError)) return String(err);
  const refused = Array.isArray(err.body.refused) ? (err.body.refused as Array<{ why?: unknown }>) : [];
  const counts = new Map<string, number>();
  for (const r of refused) counts.set(String(r.why), (counts.get(String(r.why)) ?? 0) + 1);
  if (counts.size === 0) return err.message;
  const reasons = [...counts].map(([why, n]) => (refused.length > 1 ? `${why} (${n} of ${refused.length})` : why));
  return `${err.message}: ${reasons.join('; ')}`;
}

export function ChangeForm({
  me,
  ids,
  statuses,
  onDone,
}: {
  me: Me;
  ids: readonly string[];
  /** The selected alerts' statuses, as the page last read them. */
  statuses: readonly AlertStatus[];
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
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await postJson('/console/api/alerts/changes', me, {
        alert_ids: ids,
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
      <fieldset disabled={busy || ids.length === 0}>
        <legend>
          Change {ids.length} selected alert{ids.length === 1 ? '' : 's'}
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
        <button type="submit">Apply</button>
      </fieldset>
      {error && <ErrorBox error={error} />}
    </form>
  );
}
