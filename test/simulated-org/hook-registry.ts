/**
 * The simulated org's registered hooks (seed 002 §2.3, §2.4, §3, §8;
 * protocols.md §7): their state, the validation of what a client sends, and
 * the service's error bodies. No HTTP here (hooks-api.ts serves it).
 *
 * - Event hooks start ACTIVE and UNVERIFIED; a channel change (URI, headers,
 *   auth scheme or its secret) makes them UNVERIFIED again.
 * - The secret (`channel.config.authScheme.value`) is write-only: accepted,
 *   never returned. A PUT replaces the whole object, so it must carry it again.
 * - URIs must be https; at most 10 inline hooks per org, across all types;
 *   only INACTIVE hooks may be deleted.
 */
import { randomBytes } from 'node:crypto';
import type { Reply } from './auth.js';

export const INLINE_HOOK_LIMIT = 10;
export const INLINE_TYPES = [
  'com.okta.oauth2.tokens.transform',
  'com.okta.import.transform',
  'com.okta.saml.tokens.transform',
  'com.okta.user.pre-registration',
  'com.okta.user.credential.password.import',
  'com.okta.telephony.provider',
] as const;

export interface Channel {
  readonly type: 'HTTP';
  readonly version: string;
  readonly config: {
    readonly uri: string;
    readonly method: 'POST';
    readonly headers: ReadonlyArray<{ key: string; value: string }>;
    readonly authScheme: { type: 'HEADER'; key: string; value: string } | null;
  };
}

interface Common {
  readonly id: string;
  name: string;
  status: 'ACTIVE' | 'INACTIVE';
  channel: Channel;
  readonly created: string;
  lastUpdated: string;
}
export interface SimEventHook extends Common {
  readonly kind: 'event';
  verificationStatus: 'UNVERIFIED' | 'VERIFIED';
  events: { type: 'EVENT_TYPE'; items: string[] };
}
export interface SimInlineHook extends Common {
  readonly kind: 'inline';
  type: string;
  version: string;
}
export type SimHook = SimEventHook | SimInlineHook;

/** The service's error body (errorCode, errorSummary, errorLink, errorId, errorCauses). */
export function serviceError(status: number, code: string, summary: string, causes: string[] = []): Reply {
  return {
    status,
    body: {
      errorCode: code,
      errorSummary: summary,
      errorLink: code,
      errorId: `oae${randomBytes(8).toString('hex')}`,
      errorCauses: causes.map((c) => ({ errorSummary: c })),
    },
  };
}

/** 400 E0000001 naming each field that failed: what the service answers to a body it will not take. */
export const invalid = (problems: Array<[string, string]>): Reply =>
  serviceError(
    400,
    'E0000001',
    `Api validation failed: ${problems.map(([f]) => f).join(', ')}`,
    problems.map(([f, why]) => `${f}: ${why}`),
  );

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/** A channel as sent, or the problems with it. */
function readChannel(v: unknown, problems: Array<[string, string]>): Channel | null {
  if (!isObj(v) || v.type !== 'HTTP' || !isObj(v.config)) {
    problems.push(['channel', 'type must be HTTP, with a config']);
    return null;
  }
  const c = v.config;
  let uri = '';
  try {
    const u = new URL(String(c.uri));
    if (u.protocol !== 'https:') problems.push(['channel.config.uri', 'The URI must use HTTPS (begin with https://).']);
    uri = u.toString();
  } catch {
    problems.push(['channel.config.uri', 'must be an absolute URI']);
  }
  const headers = c.headers ?? [];
  if (!Array.isArray(headers) || !headers.every((h) => isObj(h) && str(h.key) && typeof h.value === 'string'))
    problems.push(['channel.config.headers', 'must be a list of {key, value}']);
  let authScheme: Channel['config']['authScheme'] = null;
  if (c.authScheme !== undefined && c.authScheme !== null) {
    const a = c.authScheme;
    if (!isObj(a) || a.type !== 'HEADER' || !str(a.key))
      problems.push(['channel.config.authScheme', 'type must be HEADER, with a key']);
    else if (!str(a.value))
      problems.push([
        'channel.config.authScheme.value',
        'is required (it is never returned, so send it on every update)',
      ]);
    else authScheme = { type: 'HEADER', key: a.key, value: a.value };
  }
  return {
    type: 'HTTP',
    version: typeof v.version === 'string' ? v.version : '1.0.0',
    config: {
      uri,
      method: 'POST',
      headers: Array.isArray(headers) ? (headers as Channel['config']['headers']) : [],
      authScheme,
    },
  };
}

function sameChannel(a: Channel, b: Channel): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** What a client sees: every field but the secret. */
export function view(h: SimHook): Record<string, unknown> {
  const { kind: _kind, ...rest } = h;
  const auth = h.channel.config.authScheme;
  return {
    ...rest,
    channel: {
      ...h.channel,
      config: { ...h.channel.config, authScheme: auth ? { type: auth.type, key: auth.key } : null },
    },
    _links: {},
  };
}

export class HookRegistry {
  readonly #hooks = new Map<string, SimHook>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  all(kind: SimHook['kind']): SimHook[] {
    return [...this.#hooks.values()].filter((h) => h.kind === kind);
  }

  get(kind: SimHook['kind'], id: string): SimHook | undefined {
    const h = this.#hooks.get(id);
    return h?.kind === kind ? h : undefined;
  }

  /** POST /api/v1/eventHooks or /api/v1/inlineHooks. */
  create(kind: SimHook['kind'], body: unknown): SimHook | Reply {
    const read = this.#read(kind, body);
    if ('status' in read) return read;
    if (kind === 'inline' && this.all('inline').length >= INLINE_HOOK_LIMIT)
      return invalid([
        ['inlineHook', `Your org has reached the limit of ${INLINE_HOOK_LIMIT} inline hooks (across all types).`],
      ]);
    const at = new Date(this.#now()).toISOString();
    const id = `${kind === 'event' ? 'who' : 'cal'}${randomBytes(8).toString('hex')}`;
    const common = {
      id,
      name: read.name,
      status: 'ACTIVE' as const,
      channel: read.channel,
      created: at,
      lastUpdated: at,
    };
    const hook: SimHook =
      kind === 'event'
        ? { ...common, kind, verificationStatus: 'UNVERIFIED', events: read.events! }
        : { ...common, kind, type: read.type!, version: read.version! };
    this.#hooks.set(id, hook);
    return hook;
  }

  /** PUT: the whole object replaced; a changed channel needs verifying again. */
  replace(hook: SimHook, body: unknown): SimHook | Reply {
    const read = this.#read(hook.kind, body);
    if ('status' in read) return read;
    if (hook.kind === 'event') {
      if (!sameChannel(hook.channel, read.channel)) hook.verificationStatus = 'UNVERIFIED';
      hook.events = read.events!;
    } else {
      hook.type = read.type!;
      hook.version = read.version!;
    }
    hook.name = read.name;
    hook.channel = read.channel;
    this.touch(hook);
    return hook;
  }

  remove(hook: SimHook): Reply | null {
    if (hook.status !== 'INACTIVE')
      return invalid([['status', `The ${hook.kind} hook must be INACTIVE before it can be deleted.`]]);
    this.#hooks.delete(hook.id);
    return null;
  }

  touch(hook: SimHook): void {
    // Never the same instant twice: lastUpdated tells one change from the next.
    const last = Date.parse(hook.lastUpdated);
    hook.lastUpdated = new Date(Math.max(this.#now(), last + 1)).toISOString();
  }

  #read(
    kind: SimHook['kind'],
    body: unknown,
  ): Reply | { name: string; channel: Channel; events?: SimEventHook['events']; type?: string; version?: string } {
    const problems: Array<[string, string]> = [];
    if (!isObj(body)) return invalid([['body', 'must be a JSON object']]);
    if (!str(body.name) || body.name.length > 255) problems.push(['name', 'is required (1-255 characters)']);
    const channel = readChannel(body.channel, problems);
    let events: SimEventHook['events'] | undefined;
    let type: string | undefined;
    let version: string | undefined;
    if (kind === 'event') {
      const e = body.events;
      if (
        !isObj(e) ||
        e.type !== 'EVENT_TYPE' ||
        !Array.isArray(e.items) ||
        !e.items.every(str) ||
        e.items.length === 0
      )
        problems.push(['events', 'must be {type: EVENT_TYPE, items: [event types]} with at least one item']);
      else if (e.items.length > 300) problems.push(['events.items', 'at most 300 event types per hook']);
      else events = { type: 'EVENT_TYPE', items: [...(e.items as string[])] };
    } else {
      if (!(INLINE_TYPES as readonly unknown[]).includes(body.type))
        problems.push(['type', `must be one of ${INLINE_TYPES.join(', ')}`]);
      else type = body.type as string;
      if (body.version !== '1.0.0') problems.push(['version', 'must be 1.0.0']);
      else version = '1.0.0';
    }
    if (problems.length > 0 || !channel) return invalid(problems);
    return { name: body.name as string, channel, ...(events ? { events } : {}), ...(type ? { type, version } : {}) };
  }
}
