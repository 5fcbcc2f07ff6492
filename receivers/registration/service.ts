/**
 * The hook management API as registration uses it (protocols.md §7): list,
 * create, PUT, lifecycle and delete of event hooks (`/api/v1/eventHooks`) and
 * inline hooks (`/api/v1/inlineHooks`), each family on its own rate budget,
 * through the one identity client (`platform/identity/`). Replies are
 * checked at this boundary: a hook the service describes in a shape hooklog
 * cannot read is an error naming the call, never a guess.
 */
import { z } from 'zod';
import { HooklogError } from '../../platform/errors.js';
import type { Management } from '../../platform/identity/management.js';
import { SECRET_ID_HEADER, TOKEN_TRANSFORM, secretId, type DesiredHook, type HookKind } from './desired.js';

const registeredSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  status: z.string(),
  verificationStatus: z.string().nullish(),
  type: z.string().nullish(),
  lastUpdated: z.string().nullish(),
  events: z.looseObject({ items: z.array(z.string()) }).nullish(),
  channel: z.looseObject({
    type: z.string(),
    version: z.string().nullish(),
    config: z.looseObject({
      uri: z.string(),
      headers: z.array(z.looseObject({ key: z.string(), value: z.string().nullish() })).nullish(),
      authScheme: z.looseObject({ type: z.string().nullish(), key: z.string().nullish() }).nullish(),
    }),
  }),
});

/** A hook as the service describes it (its secret never included). */
export type RegisteredHook = z.output<typeof registeredSchema>;

export type Lifecycle = 'verify' | 'activate' | 'deactivate';

const PATHS: Record<HookKind, string> = { event: '/api/v1/eventHooks', inline: '/api/v1/inlineHooks' };
const FAMILY = { event: 'eventHooks', inline: 'inlineHooks' } as const;

/** The OAuth scopes a command needs for the kinds of hooks it touches. */
export function scopesFor(kinds: Iterable<HookKind>, access: 'read' | 'manage'): string[] {
  return [...new Set(kinds)].sort().map((k) => `okta.${FAMILY[k]}.${access}`);
}

/** The full object hooklog registers for a hook (POST and PUT alike: a PUT replaces everything). */
export function registrationBody(h: DesiredHook): Record<string, unknown> {
  const channel = {
    type: 'HTTP',
    version: '1.0.0',
    config: {
      uri: h.uri,
      headers: [{ key: SECRET_ID_HEADER, value: secretIdOf(h) }],
      authScheme: { type: 'HEADER', key: h.header, value: h.secrets[0] },
    },
  };
  return h.kind === 'event'
    ? { name: h.name, events: { type: 'EVENT_TYPE', items: [...h.eventTypes] }, channel }
    : { name: h.name, type: TOKEN_TRANSFORM, version: '1.0.0', channel };
}

/** The registered secret is the first: its id goes beside it. */
const secretIdOf = (h: DesiredHook) => secretId(h.secrets[0]!);

export class HookService {
  readonly #m: Management;
  #waitUntilMs: number | undefined;

  constructor(management: Management) {
    this.#m = management;
  }

  get org(): string {
    return this.#m.org;
  }

  /**
   * From now on no call waits for rate limits past `untilMs` (epoch ms): it fails IDP_RATE_LIMITED instead.
   * Set once per command (or watch pass) from `IdpPolicies.commandWait`.
   */
  limitWaits(untilMs: number): void {
    this.#waitUntilMs = untilMs;
  }

  /** `signal`: the watch's, aborted when hooklog stops, so a pass waiting on the service does not hold it up. */
  async list(kind: HookKind, signal?: AbortSignal): Promise<RegisteredHook[]> {
    // Inline hooks of every type: the limit of 10 counts them all.
    const path = PATHS[kind];
    const reply = await this.#send(kind, 'GET', path, 'read', undefined, signal);
    const parsed = z.array(registeredSchema).safeParse(reply);
    if (!parsed.success)
      throw new HooklogError(
        'IDP_REQUEST_REJECTED',
        `org ${this.org}: GET ${path}: the service described its hooks in a shape hooklog cannot read (${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message})`,
      );
    return parsed.data;
  }

  create(h: DesiredHook): Promise<RegisteredHook> {
    return this.#hook(h.kind, 'POST', PATHS[h.kind], registrationBody(h));
  }

  replace(h: DesiredHook, id: string): Promise<RegisteredHook> {
    return this.#hook(h.kind, 'PUT', `${PATHS[h.kind]}/${encodeURIComponent(id)}`, registrationBody(h));
  }

  lifecycle(kind: HookKind, id: string, step: Lifecycle): Promise<RegisteredHook> {
    return this.#hook(kind, 'POST', `${PATHS[kind]}/${encodeURIComponent(id)}/lifecycle/${step}`);
  }

  async remove(kind: HookKind, id: string): Promise<void> {
    await this.#send(kind, 'DELETE', `${PATHS[kind]}/${encodeURIComponent(id)}`, 'manage');
  }

  async #hook(kind: HookKind, method: 'POST' | 'PUT', path: string, body?: unknown): Promise<RegisteredHook> {
    const reply = await this.#send(kind, method, path, 'manage', body);
    const parsed = registeredSchema.safeParse(reply);
    if (!parsed.success)
      throw new HooklogError('IDP_REQUEST_REJECTED', `org ${this.org}: ${method} ${path}: the reply is not a hook`);
    return parsed.data;
  }

  async #send(
    kind: HookKind,
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    access: 'read' | 'manage',
    body?: unknown,
    signal?: AbortSignal,
  ) {
    const reply = await this.#m.client.send({
      method,
      path,
      ...(body !== undefined ? { body } : {}),
      ...(signal ? { signal } : {}),
      budget: this.#m.budget(kind === 'event' ? 'event-hooks' : 'inline-hooks'),
      // Lifecycle calls change nothing when repeated (activate an active hook, verify a verified one).
      retryUnsafe: path.includes('/lifecycle/'),
      ...(this.#waitUntilMs !== undefined ? { waitUntilMs: this.#waitUntilMs } : {}),
      needs: `the ${scopesFor([kind], access)[0]} scope (OAuth), or an admin role that may ${access === 'read' ? 'read' : 'manage'} hooks (SSWS token)`,
    });
    return reply.body;
  }
}
