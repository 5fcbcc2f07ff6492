/**
 * An alert's lifecycle, pure (no I/O, no Node built-ins): the server checks
 * every change with `refuseTransition` (changes.ts), and the console's pages
 * offer only the actions `offeredActions` allows for the selected alerts'
 * states, from the same rules.
 */

export const STATUSES = ['open', 'acknowledged', 'closed'] as const;
export type AlertStatus = (typeof STATUSES)[number];
export const RESOLUTIONS = ['true_positive', 'false_positive', 'benign'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];
export const ACTIONS = ['acknowledge', 'close', 'reopen', 'assign', 'comment'] as const;
export type Action = (typeof ACTIONS)[number];

/** What an analyst asks for, before it is checked against the alert's current state. */
export interface ChangeRequest {
  readonly action: Action;
  readonly resolution?: Resolution;
  readonly assignee?: string;
  readonly note?: string;
}

/**
 * Whether `change` is allowed from `current`, as a reason when it is not. The
 * lifecycle: open → acknowledged → closed (closing from open is allowed too);
 * a closed alert can be reopened; assign and comment apply in any state.
 */
export function refuseTransition(current: AlertStatus, change: ChangeRequest): string | undefined {
  switch (change.action) {
    case 'acknowledge':
      return current === 'open' ? undefined : `only an open alert can be acknowledged (it is ${current})`;
    case 'close':
      if (current === 'closed') return 'the alert is already closed';
      return change.resolution ? undefined : 'closing needs a resolution (true_positive, false_positive or benign)';
    case 'reopen':
      return current === 'open' ? 'the alert is already open' : undefined;
    case 'assign':
      return change.assignee === undefined ? 'assign needs an assignee ("" to unassign)' : undefined;
    case 'comment':
      return change.note ? undefined : 'a comment needs a note';
  }
}

/**
 * The actions that every one of these alerts (by status) can take: a change is
 * all or nothing on the server, so an action one of them refuses is not
 * offered. Only the state decides here; the form supplies the rest (a
 * resolution, an assignee, a note).
 */
export function offeredActions(statuses: readonly AlertStatus[]): Action[] {
  const complete = { resolution: 'benign', assignee: '', note: 'n' } as const;
  return ACTIONS.filter((action) => statuses.every((s) => refuseTransition(s, { action, ...complete }) === undefined));
}
