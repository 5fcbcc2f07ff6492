/**
 * What a command needs of the config. Every command loads the whole file (its shape is checked for all), but
 * only the sections it declares have their secrets resolved: `hooklog sql` reads the store and must not need
 * the hooks' HOOK_SECRET to be set. A secret of another section whose `${NAME}` is unset is deferred: it is
 * kept as a reference, and reading it (a command using a section it did not declare) fails as loading would
 * have, naming the key and the variable. `start` and `check-config` need every section ('all').
 */
import { randomBytes } from 'node:crypto';
import { HooklogError } from '../../platform/errors.js';
import { forEachSecret, type SchemaNode } from '../../platform/config/secrets.js';
import type { Config } from './schema.js';

/** A top-level section of the config. */
export type ConfigSection = keyof Config;

/** The sections whose secrets a command uses: these must resolve; 'all' for commands that run or check everything. */
export type ConfigNeeds = 'all' | readonly ConfigSection[];

/** What commands that read hooklog's own data use: the stream, the store (data_dir holds no secret). */
export const READS_STORE: ConfigNeeds = ['stream', 'store'];

/** A secret left unresolved: its key (`event_hooks.0.auth.secrets.0`) and the unset variables it refers to. */
export interface DeferredSecret {
  readonly path: readonly string[];
  readonly variables: readonly string[];
}

const PLACEHOLDER = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}/g;

/** The variables of `text`'s placeholders that are unset and have no default. */
function unsetVariables(text: string, env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PLACEHOLDER)) {
    const [whole, name] = m;
    if (name === undefined || whole.includes(':-')) continue;
    const v = env[name];
    if (v === undefined || v === '') out.push(name);
  }
  return out;
}

/** Every string under `value`, with its path. */
function strings(value: unknown, path: readonly string[], visit: (p: readonly string[], s: string) => void): void {
  if (typeof value === 'string') visit(path, value);
  else if (Array.isArray(value)) value.forEach((v, i) => strings(v, [...path, String(i)], visit));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) strings(v, [...path, k], visit);
}

function setAt(tree: unknown, path: readonly string[], value: unknown): void {
  let v = tree as Record<string, unknown>;
  for (const k of path.slice(0, -1)) v = v[k] as Record<string, unknown>;
  v[path[path.length - 1]!] = value;
}

/**
 * The secrets of sections `needs` leaves out whose variables are unset, each replaced in a copy of `raw` (the
 * config as written) by a stand-in, so the section's shape is still checked. The stand-in fits every secret
 * field (a URL, longer than any minimum) and is random: should one ever be used, it lets nobody in.
 */
export function deferSecrets(
  raw: unknown,
  schema: SchemaNode,
  env: NodeJS.ProcessEnv,
  needs: ConfigNeeds,
): { tree: unknown; deferred: DeferredSecret[] } {
  if (needs === 'all' || raw === null || typeof raw !== 'object') return { tree: raw, deferred: [] };
  const needed = new Set<string>(needs);
  const found = new Map<string, DeferredSecret>();
  forEachSecret(schema, raw, (secretPath, value) => {
    if (needed.has(secretPath[0]!)) return;
    strings(value, secretPath, (path, text) => {
      const variables = unsetVariables(text, env);
      if (variables.length > 0) found.set(JSON.stringify(path), { path, variables });
    });
  });
  if (found.size === 0) return { tree: raw, deferred: [] };
  const tree = structuredClone(raw);
  for (const d of found.values())
    setAt(tree, d.path, `https://unresolved.invalid/${randomBytes(32).toString('base64url')}`);
  return { tree, deferred: [...found.values()] };
}

/** The error loading gives for a secret whose variable is unset, and reading a deferred one gives too. */
export function unsetError(path: readonly string[], variable: string): HooklogError {
  return new HooklogError(
    'CONFIG_INVALID',
    `config key "${path.join('.')}": environment variable ${variable} is not set`,
  );
}

/**
 * Freezes `config` deeply, with each deferred secret behind a guard: the object holding it answers every read
 * of that key with the error loading would have given. Deepest first, so a guarded object can hold another;
 * each object is frozen before it is guarded (a Proxy is frozen only through its target).
 */
export function freezeGuarded<T>(config: T, deferred: readonly DeferredSecret[]): T {
  const guards = new WeakSet<object>();
  const freeze = (value: unknown): void => {
    if (value === null || typeof value !== 'object' || guards.has(value)) return;
    for (const v of Object.values(value)) freeze(v);
    Object.freeze(value);
  };
  const byParent = new Map<string, { parent: readonly string[]; keys: Map<string, DeferredSecret> }>();
  for (const d of deferred) {
    const parent = d.path.slice(0, -1);
    const entry = byParent.get(JSON.stringify(parent)) ?? { parent, keys: new Map<string, DeferredSecret>() };
    entry.keys.set(d.path[d.path.length - 1]!, d);
    byParent.set(JSON.stringify(parent), entry);
  }
  const entries = [...byParent.values()].sort((a, b) => b.parent.length - a.parent.length);
  for (const { parent, keys } of entries) {
    let holder: unknown = config;
    for (const k of parent.slice(0, -1)) holder = (holder as Record<string, unknown> | undefined)?.[k];
    const key = parent[parent.length - 1];
    const target = key === undefined ? undefined : (holder as Record<string, unknown> | undefined)?.[key];
    // A value the schema reshaped (none is today) keeps its random stand-in: unusable, only not guarded.
    if (key === undefined || target === null || typeof target !== 'object') continue;
    freeze(target);
    const refuse = (k: string | symbol) => {
      const d = typeof k === 'string' ? keys.get(k) : undefined;
      if (d) throw unsetError(d.path, d.variables[0]!);
    };
    const guard = new Proxy(target, {
      get: (t, k, receiver) => (refuse(k), Reflect.get(t, k, receiver) as unknown),
      getOwnPropertyDescriptor: (t, k) => (refuse(k), Reflect.getOwnPropertyDescriptor(t, k)),
    });
    guards.add(guard);
    (holder as Record<string, unknown>)[key] = guard;
  }
  freeze(config);
  return config;
}
