import { seededRandom } from '../support/random.js';
/**
 * Faults the simulated org can inject into replies of /api/v1/logs and
 * /api/v1/events (`SimulatedOrg.faults`), and of the modules that keep a plan
 * of their own (security events, user actions: status faults, see
 * `takeStatusFault`): queued ones (the next N requests) first, then random
 * ones at a set rate from a seeded generator, so a failing run can be replayed.
 */

export type Fault =
  /** A 5xx; with errorCode E0000009 it is the "query over 30 s" error. */
  | { readonly kind: 'status'; readonly status: number; readonly errorCode?: string }
  /**
   * A 429 while the bucket may look fine (other clients, shared headers); Reset honest (the bucket's window),
   * already past, absent, or `inMs` ahead (Remaining 0: a window other than the one the last reply named).
   */
  | { readonly kind: '429'; readonly reset: 'honest' | 'past' | 'missing' | { readonly inMs: number } }
  /** The connection is closed before any reply. */
  | { readonly kind: 'drop' }
  /** Headers and part of the body, then the connection is closed. */
  | { readonly kind: 'truncate' }
  /** The reply starts after `ms`, and its body trickles out in pieces over `ms` more. */
  | { readonly kind: 'slow'; readonly ms: number };

export class FaultPlan {
  readonly #queue: Fault[] = [];
  #random: { rate: number; faults: readonly Fault[]; rng: () => number } | null = null;
  /** Injected so far, by kind (`status:500`, `429:past`, `drop`, …). */
  readonly injected = new Map<string, number>();

  /** The next requests get these faults, in order. */
  next(...faults: Fault[]): void {
    this.#queue.push(...faults);
  }

  /** From now on, each request gets one of `faults` with probability `rate`. */
  random(rate: number, faults: readonly Fault[], seed = 1): void {
    this.#random = rate > 0 && faults.length > 0 ? { rate, faults, rng: seededRandom(seed) } : null;
  }

  clear(): void {
    this.#queue.length = 0;
    this.#random = null;
  }

  get total(): number {
    let n = 0;
    for (const v of this.injected.values()) n += v;
    return n;
  }

  take(): Fault | null {
    let f = this.#queue.shift() ?? null;
    if (!f && this.#random && this.#random.rng() < this.#random.rate) {
      const r = this.#random;
      f = r.faults[Math.floor(r.rng() * r.faults.length)]!;
    }
    if (f) {
      const key =
        f.kind === 'status'
          ? `status:${f.status}${f.errorCode ? `:${f.errorCode}` : ''}`
          : f.kind === '429'
            ? `429:${typeof f.reset === 'object' ? 'in' : f.reset}`
            : f.kind;
      this.injected.set(key, (this.injected.get(key) ?? 0) + 1);
    }
    return f;
  }
}

/**
 * The fault a module's request gets from `plan`, noted on the request's record, or null. A module answers with a
 * whole reply, so only a status fault fits: any other kind is a mistake of the test, thrown (the org answers 500).
 */
export function takeStatusFault(
  plan: FaultPlan,
  rec: { fault?: string },
  module: string,
): { readonly status: number; readonly errorCode: string } | null {
  const f = plan.take();
  if (!f) return null;
  rec.fault = f.kind;
  if (f.kind !== 'status') throw new Error(`the ${module} module injects status faults only, not ${f.kind}`);
  return { status: f.status, errorCode: f.errorCode ?? 'E0000009' };
}

/**
 * The X-Rate-Limit-* headers of an injected 429, from the bucket's honest ones (`honest`, empty when the bucket
 * sends none): as they are, Reset moved 30 s into the past, none at all, or Reset `inMs` from `now` with
 * Remaining 0.
 */
export function rateLimitFaultHeaders(
  fault: Extract<Fault, { kind: '429' }>,
  honest: Record<string, string>,
  now: number,
): Record<string, string> {
  if (fault.reset === 'missing') return {};
  if (fault.reset === 'honest') return honest;
  if (fault.reset === 'past') return { ...honest, 'x-rate-limit-reset': String(Math.floor(now / 1000) - 30) };
  return {
    'x-rate-limit-limit': honest['x-rate-limit-limit'] ?? '100',
    'x-rate-limit-remaining': '0',
    'x-rate-limit-reset': String(Math.ceil((now + fault.reset.inMs) / 1000)),
  };
}
