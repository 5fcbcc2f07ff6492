/** Acknowledge, close (with a resolution and a note), reopen, assign or comment: one alert or many. */
import { useState } from 'preact/hooks';
import { ApiError, postJson, type Me } from '../api.js';
import { ErrorBox, Field } from '../ui.js';

export function ChangeForm({ me, ids, onDone }: { me: Me; ids: readonly string[]; onDone: () => void }) {
  const [action, setAction] = useState('acknowledge');
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
      setError(err instanceof ApiError ? err.message : String(err));
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
          <select id="c-action" name="action" value={action} onChange={(e) => setAction(e.currentTarget.value)}>
            <option value="acknowledge">Acknowledge</option>
            <option value="close">Close</option>
            <option value="reopen">Reopen</option>
            <option value="assign">Assign</option>
            <option value="comment">Comment</option>
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
