/**
 * The console's only state is the URL: each page reads its parameters from
 * `location`, fetches its data from /console/api, and links to other pages by
 * URL. Changes carry the session's CSRF token from /console/api/me.
 */

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
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function answer<T>(res: Response): Promise<T> {
  if (res.status === 401) {
    // The session ended: sign in again and come back here.
    location.assign(`/console/auth/login?${new URLSearchParams({ return_to: location.pathname + location.search })}`);
    throw new ApiError(401, 'signed out');
  }
  const body = (await res.json().catch(() => ({}))) as { error?: string };
  if (!res.ok) throw new ApiError(res.status, body.error ?? `HTTP ${res.status}`);
  return body as T;
}

export async function getJson<T>(path: string, params: Record<string, string | undefined> = {}): Promise<T> {
  return answer<T>(await fetch(withQuery(path, params), { credentials: 'same-origin' }));
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

/** The page's query parameters. */
export function params(): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(location.search));
}
