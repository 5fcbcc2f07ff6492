/**
 * Carries out an org's plan (plan.ts), hook by hook, in the plan's order
 * (deletions first). A hook whose step fails stops there, with one line
 * naming it, the step and the service's errorCode, errorSummary and causes;
 * the other hooks go on. Nothing is retried here beyond what the identity
 * client retries (a 429 waited out; a transient failure of a call that is
 * safe to repeat): a create the service may have done is found by its name
 * next time, never made twice.
 */
import { HooklogError, errorMessage } from '../../platform/errors.js';
import { IdpReplyError } from '../../platform/identity/errors.js';
import { hookLabel } from './desired.js';
import type { HookPlan, Step } from './plan.js';
import type { HookService, RegisteredHook } from './service.js';

export interface HookOutcome {
  readonly plan: HookPlan;
  /** Steps done, in order, with the hook as the service answered after each. */
  readonly done: ReadonlyArray<{ readonly step: Step; readonly hook: RegisteredHook | null }>;
  /** One line: the hook, the step that failed and why; null when every step was done. */
  readonly error: string | null;
}

/** Why a call failed, in one line: the service's own words first. */
export function describeFailure(err: unknown): string {
  if (err instanceof IdpReplyError) {
    const needs = err.status === 403 ? /needs (.+)$/.exec(err.message)?.[1] : undefined;
    return `HTTP ${err.status}: ${err.serviceSays}${needs ? `; needs ${needs}` : ''}`;
  }
  if (err instanceof HooklogError) return `${err.code}: ${err.message}`;
  return errorMessage(err);
}

/** The hook's line for a failure of `what` (a step, or "list"). */
export function failureLine(p: Pick<HookPlan, 'kind' | 'id' | 'org'>, what: string, err: unknown): string {
  return `${hookLabel(p)} (org ${p.org}): ${what} failed: ${describeFailure(err)}`;
}

async function run(service: HookService, p: HookPlan, id: string | null, step: Step): Promise<RegisteredHook | null> {
  if (step === 'create') return service.create(p.desired!);
  if (step === 'update') return service.replace(p.desired!, id!);
  if (step === 'delete') {
    await service.remove(p.kind, id!);
    return null;
  }
  return service.lifecycle(p.kind, id!, step);
}

export async function applyPlans(service: HookService, plans: readonly HookPlan[]): Promise<HookOutcome[]> {
  const out: HookOutcome[] = [];
  for (const p of plans) {
    const done: Array<{ step: Step; hook: RegisteredHook | null }> = [];
    let id = p.registered?.id ?? null;
    let error: string | null = null;
    for (const step of p.steps) {
      try {
        const hook = await run(service, p, id, step);
        id = hook?.id ?? id;
        done.push({ step, hook });
      } catch (err) {
        error = failureLine(p, step, err);
        break;
      }
    }
    out.push({ plan: p, done, error });
  }
  return out;
}
