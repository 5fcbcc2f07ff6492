/**
 * The console's only state is the URL: each page reads its parameters from
 * `location`, fetches its data from /console/api, and links to other pages by
 * URL. Changes carry the session's CSRF token from /console/api/me.
 */
import { linkValue, MAX_LINKED } from '../display.js';

export interface Me {
  readonly id: string;
  readonly name: string;
  readonly role: 'analyst' | 'viewer';
  readonly orgs: readonly string[];
  readonly csrf: string | null;
  readonly expires_at: string | null;
}

export class ApiError extends Error {
  readonly status: number;
  /** The answer's body (a refused change lists each alert's reason in `refused`). */
  readonly body: Record<string, unknown>;
  constructor(status: number, message: string, body: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

async function answer<T>(res: Response): Promise<T> {
  if (res.status === 401) {
    // The session ended: sign in again and come back here.
    location.assign(`/console/auth/login?${new URLSearchParams({ return_to: location.pathname + location.search })}`);
    throw new ApiError(401, 'signed out');
  }
  const body = (await res.json().catch(() => ({}))) as { error?: string };
  if (!res.ok) throw new ApiError(res.status, body.error ?? `HTTP ${res.status}`, body);
  return body as T;
}

export async function getJson<T>(path: string, params: Record<string, string | undefined> = {}): Promise<T> {
  return answer<T>(await fetch(withQuery(path, params), { credentials: 'same-origin' }));
}

/** A file the API answers (a download): its bytes; an error answer throws as getJson's does. */
export async function getFile(path: string, params: Record<string, string | undefined> = {}): Promise<Blob> {
  const res = await fetch(withQuery(path, params), { credentials: 'same-origin' });
  return res.ok ? res.blob() : answer<never>(res);
}

export async function postJson<T>(path: string, me: Me, body: unknown): Promise<T> {
  const res = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': me.csrf ?? '' },
    body: JSON.stringify(body),
  });
  return answer<T>(res);
}

/** A console URL: path segments are encoded by the caller (`seg`), the query here. Empty values are left out. */
export function withQuery(path: string, params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** One path segment, encoded (a login or an IP becomes part of a URL only this way). */
export const seg = (s: string): string => encodeURIComponent(s);

/** The page of one user of one org; a long login is linked by reference (the API resolves it). */
export const userHref = (org: string, user: string): string => `/console/users/${seg(org)}/${seg(linkValue(user))}`;

/** The page of one IP, in one org when given. */
export const ipHref = (ip: string, org?: string): string => withQuery(`/console/ips/${seg(linkValue(ip))}`, { org });

/** The events page: filter values from events are linked by reference when long. */
export const eventsHref = (params: Record<string, string | undefined>): string =>
  withQuery(
    '/console/events',
    Object.fromEntries(Object.entries(params).map(([k, v]) => [k, v === undefined ? v : linkValue(v)])),
  );

/**
 * `field eq "value"` in the rules' filter language, or undefined for a value longer than MAX_LINKED: a
 * filter carries its values whole, so a long one would put an unbounded value in the URL.
 */
export function eqFilter(field: string, value: string): string | undefined {
  return value.length > MAX_LINKED ? undefined : `${field} eq ${JSON.stringify(value)}`;
}

/** The Search page for `filter` over [since, until) of one org: the whole search is in the URL. */
export const searchHref = (p: { org: string; filter: string; since?: string; until?: string }): string =>
  withQuery('/console/search', p);

/** The page's query parameters. */
export function params(): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(location.search));
}

/** Deletes what `path` names, with the session's CSRF token (a saved search). */
export async function deleteJson<T>(path: string, me: Me): Promise<T> {
  const res = await fetch(path, {
    method: 'DELETE',
    credentials: 'same-origin',
    headers: { 'x-csrf-token': me.csrf ?? '' },
  });
  return answer<T>(res);
}
