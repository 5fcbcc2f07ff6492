/**
 * Carries out an org's plan (plan.ts), hook by hook, in the plan's order
 * (deletions first). A hook whose step fails stops there, with one line
 * naming it, the step and the service's errorCode, errorSummary and causes;
 * the other hooks go on. Nothing is retried here beyond what the identity
 * client retries (a 429 waited out; a transient failure of a call that is
 * safe to repeat): a create the service may have done is found by its name
 * next time, never made twice. Before a PUT that changes an event hook's
 * channel, apply sends hooklog at the new URI the verification challenge with
 * the new secret itself (challenge.ts), and refuses the PUT when it fails.
 */
import { HooklogError, errorMessage } from '../../platform/errors.js';
import { IdpReplyError } from '../../platform/identity/errors.js';
import { challengeFails, type ChallengeOptions } from './challenge.js';
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

/**
 * Why a plan's PUT must not be made, or null: an event hook's new channel (a secret, a URI) that hooklog at that
 * URI does not answer the verification challenge for would leave the hook UNVERIFIED, delivering nothing.
 */
async function refusePut(p: HookPlan, challenge: ChallengeOptions | undefined): Promise<string | null> {
  const d = p.desired;
  if (!d || p.kind !== 'event' || !p.steps.includes('update') || !p.drift?.channelChanged) return null;
  const why = await challengeFails(d, challenge);
  if (why === null) return null;
  return (
    `${hookLabel(p)} (org ${p.org}): update refused: hooklog at ${d.uri} does not answer the verification challenge ` +
    `with the secret to be registered (the first of auth.secrets): ${why}. The service would hold the hook UNVERIFIED ` +
    `and deliver nothing; have every receiver accept that secret first (step 1 of a rotation). The hook keeps what it has`
  );
}

export interface ApplyOptions {
  /** How apply sends the verification challenge to hooklog before a PUT (challenge.ts). */
  readonly challenge?: ChallengeOptions;
}

export async function applyPlans(
  service: HookService,
  plans: readonly HookPlan[],
  opts: ApplyOptions = {},
): Promise<HookOutcome[]> {
  const out: HookOutcome[] = [];
  for (const p of plans) {
    const refused = await refusePut(p, opts.challenge);
    if (refused) {
      out.push({ plan: p, done: [], error: refused });
      continue;
    }
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
