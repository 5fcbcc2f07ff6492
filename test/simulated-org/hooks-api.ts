/**
 * The simulated org's hook management API (seed 002 §4.3, §4.4;
 * protocols.md §7), a `SimApi` module: `/api/v1/eventHooks` and
 * `/api/v1/inlineHooks` with create, list, get, PUT, lifecycle (verify,
 * activate, deactivate) and DELETE. Each family spends its own rate-limit
 * bucket (`event-hooks`, `inline-hooks`); calls need the scope
 * `okta.<eventHooks|inlineHooks>.manage` (`.read` is enough for a GET).
 *
 * Verify runs the real exchange against the hook's endpoint (hook-calls.ts).
 * Once an event hook is ACTIVE and VERIFIED, `deliver` sends it the events it
 * subscribes to (hook-sender.ts: batched, one retry, a loss logged); events
 * happening while it is not are not sent to it (counted in `skipped`).
 * Deactivating and deleting an event hook are not in the seed; the module
 * serves them as the inline hooks' (the real API has both). `faults` injects
 * 429s (with an honest, past, missing or chosen Reset) and 5xx into calls.
 */
import type { RawReply, SimApi, SimOrg, SimRequest } from './api.js';
import type { Reply } from './auth.js';
import { FaultPlan, rateLimitFaultHeaders } from './faults.js';
import { call, channelHeaders, verifyEndpoint, VERIFY_TIMEOUT_MS, type CallResult } from './hook-calls.js';
import { HookRegistry, serviceError, view, type SimEventHook, type SimHook } from './hook-registry.js';
import { HookSender } from './hook-sender.js';
import type { SimulatedOrg } from './server.js';
import type { StoredEvent } from './store.js';

const ROUTE =
  /^\/api\/v1\/(eventHooks|inlineHooks)(?:\/([A-Za-z0-9]+)(?:\/lifecycle\/(verify|activate|deactivate))?)?$/;

export interface HooksApiOptions {
  /** CA certificate(s) the org trusts when it calls hook endpoints (the test's own). */
  readonly ca?: Buffer;
  readonly verifyTimeoutMs?: number;
}

export interface DeliveryAttempt {
  readonly hookId: string;
  readonly status: number;
  /** The secret the delivery carried. */
  readonly secret: string | null;
}

export class HookManagementApi implements SimApi {
  readonly name = 'hook-management';
  readonly hooks: HookRegistry;
  /** Every delivery attempt to an event hook, in order. */
  readonly attempts: DeliveryAttempt[] = [];
  /** Events not sent to a hook (by id) because it was not ACTIVE and VERIFIED. */
  readonly skipped = new Map<string, number>();
  /** 429 and status faults for management calls (after the call spent its bucket's request). */
  readonly faults = new FaultPlan();
  readonly #sim: SimulatedOrg;
  readonly #o: HooksApiOptions;
  readonly #senders = new Map<string, { types: string; sender: HookSender }>();

  constructor(sim: SimulatedOrg, opts: HooksApiOptions = {}) {
    this.#sim = sim;
    this.#o = opts;
    this.hooks = new HookRegistry(Date.now);
  }

  /** Hooks of a kind with this name (hooklog recognises its own by name). */
  named(kind: SimHook['kind'], name: string): SimHook[] {
    return this.hooks.all(kind).filter((h) => h.name === name);
  }

  async handle(req: SimRequest, org: SimOrg): Promise<Reply | RawReply | null> {
    const m = ROUTE.exec(req.url.pathname);
    if (!m) return null;
    const kind = m[1] === 'eventHooks' ? 'event' : 'inline';
    const [id, action] = [m[2], m[3]];
    const limit = org.admit(kind === 'event' ? 'event-hooks' : 'inline-hooks');
    if (limit.refused) return limit.refused;
    const fault = this.#fault(req, limit.headers);
    if (fault) return fault;
    const denied = await this.#authorize(req, org, m[1]!);
    if (denied) return { ...denied, headers: { ...limit.headers, ...denied.headers } };
    const reply = await this.#route(req, kind, id, action);
    return { ...reply, headers: { ...limit.headers, ...('headers' in reply ? reply.headers : {}) } };
  }

  /** A 429 or status fault from `faults` (the request spent its bucket's request first), or null. */
  #fault(req: SimRequest, honest: Record<string, string>): Reply | null {
    const f = this.faults.take();
    if (!f) return null;
    req.rec.fault = f.kind;
    if (f.kind === '429')
      return {
        ...serviceError(429, 'E0000047', 'API call exceeded rate limit due to too many requests.'),
        headers: rateLimitFaultHeaders(f, honest, req.now),
      };
    if (f.kind === 'status')
      return { ...serviceError(f.status, f.errorCode ?? 'E0000009', 'Internal Server Error'), headers: honest };
    throw new Error(`the ${this.name} module injects 429 and status faults only, not ${f.kind}`);
  }

  /** Sends each ACTIVE and VERIFIED event hook the events among `events` it subscribes to. */
  async deliver(events: readonly StoredEvent[]): Promise<void> {
    for (const hook of this.hooks.all('event') as SimEventHook[]) {
      const sender = this.#sender(hook);
      const mine = events.filter((e) => sender.subscribes(e));
      if (hook.status !== 'ACTIVE' || hook.verificationStatus !== 'VERIFIED') {
        this.skipped.set(hook.id, (this.skipped.get(hook.id) ?? 0) + mine.length);
        continue;
      }
      await sender.send(mine);
    }
  }

  /** The service calling an inline hook (one attempt, 3 s, never retried). */
  async callInline(id: string, body: unknown): Promise<CallResult> {
    const hook = this.hooks.get('inline', id);
    if (!hook || hook.status !== 'ACTIVE') throw new Error(`inline hook ${id} is not active`);
    return call(hook.channel.config.uri, {
      method: 'POST',
      headers: channelHeaders(hook.channel),
      body: JSON.stringify(body),
      ...(this.#o.ca ? { ca: this.#o.ca } : {}),
      timeoutMs: 3_000,
    });
  }

  #sender(hook: SimEventHook): HookSender {
    const types = JSON.stringify(hook.events.items);
    const known = this.#senders.get(hook.id);
    if (known?.types === types) return known.sender;
    const sender = new HookSender(this.#sim, {
      hookId: hook.id,
      types: hook.events.items,
      dropRate: 0,
      post: async (envelope) => {
        // The channel as registered now: a secret rotated by a PUT is used from then on.
        const headers = channelHeaders(hook.channel);
        const secret = hook.channel.config.authScheme?.value ?? null;
        const status = await call(hook.channel.config.uri, {
          method: 'POST',
          headers,
          body: JSON.stringify(envelope),
          ...(this.#o.ca ? { ca: this.#o.ca } : {}),
          timeoutMs: 3_000,
        }).then(
          (r) => r.status,
          () => 0,
        );
        this.attempts.push({ hookId: hook.id, status, secret });
        return status;
      },
    });
    this.#senders.set(hook.id, { types, sender });
    return sender;
  }

  async #authorize(req: SimRequest, org: SimOrg, family: string): Promise<Reply | null> {
    const denied = await org.authorize(req, `okta.${family}.manage`);
    if (!denied || req.method !== 'GET' || denied.status !== 403) return denied;
    return org.authorize(req, `okta.${family}.read`);
  }

  async #route(req: SimRequest, kind: SimHook['kind'], id?: string, action?: string): Promise<Reply> {
    const what = kind === 'event' ? 'EventHook' : 'InlineHook';
    const unknown = (): Reply => ({
      ...serviceError(404, 'E0000007', `Not found: Resource not found: ${req.method} ${req.url.pathname}`),
      violation: 'unknown endpoint',
    });
    if (id === undefined) {
      if (req.method === 'GET') {
        const type = req.url.searchParams.get('type');
        const list = this.hooks.all(kind).filter((h) => !type || (h.kind === 'inline' && h.type === type));
        return { status: 200, body: list.map(view) };
      }
      if (req.method !== 'POST') return unknown();
      const body = parseBody(req);
      if (!body.ok) return body.reply;
      const created = this.hooks.create(kind, body.value);
      return 'kind' in created ? { status: 200, body: view(created) } : created;
    }
    const hook = this.hooks.get(kind, id);
    if (!hook) return serviceError(404, 'E0000007', `Not found: Resource not found: ${id} (${what})`);
    if (action === undefined) {
      if (req.method === 'GET') return { status: 200, body: view(hook) };
      if (req.method === 'DELETE') return this.hooks.remove(hook) ?? { status: 204, body: undefined };
      if (req.method !== 'PUT') return unknown();
      const body = parseBody(req);
      if (!body.ok) return body.reply;
      const updated = this.hooks.replace(hook, body.value);
      return 'kind' in updated ? { status: 200, body: view(updated) } : updated;
    }
    if (req.method !== 'POST') return unknown();
    if (action === 'activate' || action === 'deactivate') {
      hook.status = action === 'activate' ? 'ACTIVE' : 'INACTIVE';
      this.hooks.touch(hook);
      return { status: 200, body: view(hook) };
    }
    if (hook.kind !== 'event') return unknown();
    const reasons = await verifyEndpoint(hook.channel, this.#o.ca, this.#o.verifyTimeoutMs ?? VERIFY_TIMEOUT_MS);
    if (reasons) return serviceError(400, 'E0000001', 'Event hook verification failed', [...new Set(reasons)]);
    hook.verificationStatus = 'VERIFIED';
    this.hooks.touch(hook);
    return { status: 200, body: view(hook) };
  }
}

function parseBody(req: SimRequest): { ok: true; value: unknown } | { ok: false; reply: Reply } {
  try {
    return { ok: true, value: JSON.parse(req.body.toString('utf8')) as unknown };
  } catch {
    return { ok: false, reply: serviceError(400, 'E0000003', 'The request body was not well-formed.') };
  }
}
