import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { HooklogError } from '../../platform/errors.js';
import { unexpandedSecrets } from '../../platform/config/secrets.js';
import { configJsonSchema, configSchema, type Config } from './schema.js';
import { coerceEnvValues, pathKey, type EnvPaths } from './env-types.js';
import { deferSecrets, freezeGuarded, type ConfigNeeds } from './needs.js';

export const DEFAULT_CONFIG_PATH = './hooklog.yaml';

export interface LoadedConfig {
  readonly config: Config;
  /** Where it came from: a file path, or 'defaults' when no file exists. */
  readonly origin: string;
  /** Set when the demo hook's secret was generated and must be shown to the operator once. */
  readonly generatedDemoSecret?: string;
}

/** A value that is one placeholder and nothing else: typed by the schema (env-types.ts). */
const WHOLE_PLACEHOLDER = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

/**
 * Replaces `${NAME}` (and `${NAME:-fallback}`) in every string of the parsed
 * YAML tree. Interpolating values after parsing, not text before it, means a
 * secret can never change the document's structure and errors can name the key.
 * A `${` that does not open such a placeholder (`${HOOK_SECRET` without its
 * brace, `${1X}`) is an error naming the key, never literal text: it would
 * otherwise become the value itself, a secret anyone could read in the file.
 * `$${` writes a literal `${`. The paths of values that were one placeholder
 * and nothing else are added to `whole`, so the schema can type them
 * (`port: ${PORT}`).
 */
export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv, path: string[] = [], whole?: EnvPaths): unknown {
  if (typeof value === 'string') {
    if (whole && WHOLE_PLACEHOLDER.test(value)) whole.add(pathKey(path));
    const key = path.join('.') || '(root)';
    return value.replace(
      /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{/g,
      (match: string, name: string | undefined, fallback: string | undefined) => {
        if (match === '$${') return '${';
        if (name === undefined)
          throw new HooklogError(
            'CONFIG_INVALID',
            `config key "${key}": "\${" does not open a placeholder here; write \${NAME} or \${NAME:-default} (NAME: letters, digits, _), or $\${ for a literal "\${"`,
          );
        const v = env[name];
        if (v !== undefined && v !== '') return v;
        if (fallback !== undefined) return fallback;
        throw new HooklogError('CONFIG_INVALID', `config key "${key}": environment variable ${name} is not set`);
      },
    );
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, [...path, String(i)], whole));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, [...path, k], whole)]));
  }
  return value;
}

/**
 * Settings one process of several sharing a config file sets for itself (flags of `hooklog start`, or
 * HOOKLOG_PORT / HOOKLOG_INSTANCE_ID); they replace the file's value and are typed like environment values.
 */
export interface ProcessOverrides {
  readonly port?: string | undefined;
  readonly instanceId?: string | undefined;
}

/** The environment's per-process overrides, under the flags given (a flag wins). */
export function processOverrides(env: NodeJS.ProcessEnv, flags: ProcessOverrides = {}): ProcessOverrides {
  const pick = (flag: string | undefined, name: string) => flag ?? (env[name] !== '' ? env[name] : undefined);
  return { port: pick(flags.port, 'HOOKLOG_PORT'), instanceId: pick(flags.instanceId, 'HOOKLOG_INSTANCE_ID') };
}

function applyOverrides(tree: unknown, o: ProcessOverrides, fromEnv: EnvPaths): unknown {
  const root = (tree !== null && typeof tree === 'object' && !Array.isArray(tree) ? tree : {}) as Record<
    string,
    unknown
  >;
  if (o.port !== undefined) {
    const server = root.server;
    root.server = { ...(server !== null && typeof server === 'object' ? server : {}), port: o.port };
    fromEnv.add(pathKey(['server', 'port']));
  }
  if (o.instanceId !== undefined) root.instance_id = o.instanceId;
  return root;
}

/**
 * Validates an already-parsed config tree; errors name each offending key.
 * Values from the environment are typed by the schema (env-types.ts). Only
 * the secrets of the sections in `needs` must resolve; another's whose
 * variable is unset stays a reference that fails when read (needs.ts).
 */
export function parseConfig(
  raw: unknown,
  env: NodeJS.ProcessEnv = process.env,
  overrides: ProcessOverrides = {},
  needs: ConfigNeeds = 'all',
): Config {
  // Before interpolation: a secret written like an unexpanded variable ($HOOK_SECRET) would become the secret.
  const unexpanded = unexpandedSecrets(raw, configJsonSchema());
  if (unexpanded.length > 0) throw new HooklogError('CONFIG_INVALID', unexpanded.join('\n'));
  const { tree: resolvable, deferred } = deferSecrets(raw ?? {}, configJsonSchema(), env, needs);
  const fromEnv: EnvPaths = new Set();
  const tree = applyOverrides(interpolateEnv(resolvable, env, [], fromEnv), overrides, fromEnv);
  let result = configSchema.safeParse(tree);
  let unreadable: ReadonlyMap<string, string> = new Map();
  // A section is checked only once its parent parses, so a second round may find more (bounded by depth).
  for (let round = 0; !result.success && round < 8; round++) {
    const c = coerceEnvValues(tree, result.error.issues, fromEnv);
    unreadable = c.unreadable;
    if (!c.changed) break;
    result = configSchema.safeParse(tree);
  }
  if (!result.success) throw new HooklogError('CONFIG_INVALID', formatIssues(result.error, unreadable));
  return freezeGuarded(result.data, deferred);
}

export function formatIssues(error: z.ZodError, unreadable: ReadonlyMap<string, string> = new Map()): string {
  return error.issues
    .map((i) => {
      const key = i.path.join('.') || '(root)';
      if (i.code === 'unrecognized_keys')
        return `config key "${key}": unknown key(s) ${i.keys.map((k) => `"${k}"`).join(', ')}`;
      return `config key "${key}": ${unreadable.get(pathKey(i.path)) ?? i.message}`;
    })
    .join('\n');
}

/**
 * Loads the config: `path` if given, else HOOKLOG_CONFIG, else ./hooklog.yaml;
 * with no file at the default location, the documented default (embedded
 * stream and store, one demo event hook). `needs`: the sections whose secrets
 * the command uses (needs.ts); every command declares its own.
 */
export function loadConfig(
  path?: string,
  env: NodeJS.ProcessEnv = process.env,
  flags: ProcessOverrides = {},
  needs: ConfigNeeds = 'all',
): LoadedConfig {
  const explicit = path ?? env.HOOKLOG_CONFIG;
  const file = explicit ?? DEFAULT_CONFIG_PATH;
  const overrides = processOverrides(env, flags);
  if (!existsSync(file)) {
    if (explicit) throw new HooklogError('CONFIG_NOT_FOUND', `config file ${file} does not exist`);
    return defaultConfig(env, overrides);
  }
  const doc = parseDocument(readFileSync(file, 'utf8'), { uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new HooklogError('CONFIG_INVALID', `${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
  }
  try {
    return { config: parseConfig(doc.toJS(), env, overrides, needs), origin: file };
  } catch (err) {
    if (err instanceof HooklogError) throw new HooklogError(err.code, `${file}:\n${err.message}`);
    throw err;
  }
}

/** The zero-setup default: embedded everything under ./data and one demo hook. */
export function defaultConfig(env: NodeJS.ProcessEnv = process.env, overrides: ProcessOverrides = {}): LoadedConfig {
  const given = env.HOOKLOG_DEMO_SECRET;
  const secret = given && given.length > 0 ? given : randomBytes(24).toString('base64url');
  const config = parseConfig(
    { event_hooks: [{ id: 'demo', org: 'demo', auth: { header: 'authorization', secrets: [secret] } }] },
    env,
    overrides,
  );
  return given ? { config, origin: 'defaults' } : { config, origin: 'defaults', generatedDemoSecret: secret };
}
