/**
 * Which actions a risk change names, and what becomes of each in its org: the
 * decision, made once per change and recorded before anything is called. Pure.
 *
 * A change names actions by the level a finding raised the user to
 * (`on_level`), by the rule whose finding it was (`on_rule`), or by the user
 * falling back to none (`on_cleared`). Each named action is then, by the org's
 * settings: nothing (mode off), `dry_run`, `not_allowed` (not in `allow`),
 * `awaiting_approval` (in `require_approval`) or `requested` (to run).
 */
import { createHash } from 'node:crypto';
import { riskRank, type RiskChange } from '../../schemas/risk.js';
import type { ActionName, ResponseOrgConfig, TriggersConfig } from './config.js';
import type { ActionRecord } from './records.js';

export interface NamedAction {
  readonly action: ActionName;
  readonly group_id?: string;
}

/** `add_to_group:00g1` → { add_to_group, 00g1 }. */
export function parseActionSpec(spec: string): NamedAction {
  const [name, group] = spec.split(':', 2) as [ActionName, string | undefined];
  return group === undefined ? { action: name } : { action: name, group_id: group };
}

/** The actions `change` names, each once, in the order configured (level, rule, cleared). */
export function namedActions(change: RiskChange, triggers: TriggersConfig): NamedAction[] {
  const specs: string[] = [];
  const rising = riskRank(change.current) > riskRank(change.previous);
  if (change.cause === 'finding' && rising && change.current !== 'none')
    specs.push(...(triggers.on_level[change.current] ?? []), ...(triggers.on_rule[change.rule_id] ?? []));
  if (change.current === 'none' && change.previous !== 'none') specs.push(...triggers.on_cleared);
  return [...new Set(specs)].map(parseActionSpec);
}

/** Stable id of one action: (org, alert, cause, action, group). Once per (alert, action), whoever decides it. */
export function actionId(change: RiskChange, a: NamedAction): string {
  return createHash('sha256')
    .update(`hooklog-action\n${change.org}\n${change.alert_id}\n${change.cause}\n${a.action}\n${a.group_id ?? ''}`)
    .digest('hex')
    .slice(0, 32);
}

/** The decided actions of `change` in its org, as the records that state them (none when the mode is off). */
export function decideActions(
  change: RiskChange,
  triggers: TriggersConfig,
  org: ResponseOrgConfig,
  nowIso: string,
): ActionRecord[] {
  const policy = org.actions;
  if (policy.mode === 'off') return [];
  return namedActions(change, triggers).map((a) => {
    const state = !policy.allow.includes(a.action)
      ? 'not_allowed'
      : policy.mode === 'dry_run'
        ? 'dry_run'
        : policy.require_approval.includes(a.action)
          ? 'awaiting_approval'
          : 'requested';
    return {
      action_id: actionId(change, a),
      org: change.org,
      state,
      at: nowIso,
      action: a.action,
      ...(a.group_id ? { group_id: a.group_id } : {}),
      user_id: change.entity.id,
      ...(change.entity.login ? { user_login: change.entity.login } : {}),
      rule_id: change.rule_id,
      alert_id: change.alert_id,
      change_id: change.change_id,
      attempt: 0,
      ...(state === 'not_allowed' ? { note: `${a.action} is not in this org's response actions allow-list` } : {}),
      ...(state === 'dry_run' ? { note: 'dry run: no management call' } : {}),
    };
  });
}
